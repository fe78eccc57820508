import type { ToolCallDeltaEvent, ToolCallEvent } from './stream-event.ts';

interface PendingCall {
  index: number;
  id: string | undefined;
  name: string | undefined;
  /** Fragments are kept as a list and joined once: no quadratic concatenation on long arguments. */
  fragments: string[];
}

/**
 * Collects tool-call fragments by index and completes them at the end. Fragments are partial JSON
 * *text*: parsing one before the last has arrived is the classic streaming tool-call bug, so the
 * arguments are parsed exactly once, in `complete()`.
 */
export class ToolCallAccumulator {
  readonly #calls = new Map<number, PendingCall>();

  get size(): number {
    return this.#calls.size;
  }

  add(delta: ToolCallDeltaEvent): void {
    let call = this.#calls.get(delta.index);
    if (call === undefined) {
      call = { index: delta.index, id: undefined, name: undefined, fragments: [] };
      this.#calls.set(delta.index, call);
    }
    // Only the first fragment normally carries id and name; TGI repeats the id and sends `name: null`.
    if (delta.id !== undefined && delta.id !== '' && call.id === undefined) call.id = delta.id;
    if (delta.name !== undefined && delta.name !== '' && call.name === undefined) call.name = delta.name;
    if (delta.argumentsDelta !== '') call.fragments.push(delta.argumentsDelta);
  }

  /** Completes every pending call, in index order, and forgets them. */
  complete(): ToolCallEvent[] {
    const done: ToolCallEvent[] = [];
    const indexes = [...this.#calls.keys()].sort((a, b) => a - b);
    for (const index of indexes) {
      const call = this.#calls.get(index)!;
      done.push(completeToolCall(call.index, call.id, call.name, call.fragments.join('')));
    }
    this.#calls.clear();
    return done;
  }
}

/** Builds the complete-call event, parsing the arguments once. Empty arguments mean `{}`. */
export function completeToolCall(
  index: number,
  id: string | undefined,
  name: string | undefined,
  args: string,
): ToolCallEvent {
  const event: ToolCallEvent = {
    type: 'tool-call',
    index,
    id: id ?? `call_${index}`,
    name: name ?? '',
    arguments: args,
    input: undefined,
  };
  if (args.trim() === '') {
    event.input = {};
    return event;
  }
  try {
    event.input = JSON.parse(args);
  } catch (error) {
    event.inputError = `tool-call arguments are not valid JSON: ${(error as Error).message}`;
  }
  return event;
}
