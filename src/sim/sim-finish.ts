import type { DialectId } from '../dialects/dialect.ts';
import type { FinishEvent } from '../events/stream-event.ts';

/** Why a simulated answer ended. */
export type EndKind = 'eos' | 'stop-sequence' | 'length' | 'tool-calls';

/**
 * The finish event for an ending, with the raw word the imitated server uses (wire-formats.md §7):
 * TGI says `eos_token`/`stop_sequence`, llama.cpp's native endpoint `eos`/`word`/`limit`, the
 * OpenAI-style routes `stop`/`length`/`tool_calls`.
 */
export function simFinish(
  kind: EndKind,
  dialect: DialectId,
  flavor: string,
  stopSequence?: string,
): FinishEvent {
  const tgiWords = dialect === 'tgi' || (dialect === 'openai-completions' && flavor === 'tgi');
  let raw: string;
  switch (kind) {
    case 'eos':
      raw = tgiWords ? 'eos_token' : dialect === 'llamacpp' ? 'eos' : 'stop';
      break;
    case 'stop-sequence':
      raw =
        tgiWords || (dialect === 'openai-chat' && flavor === 'tgi')
          ? 'stop_sequence'
          : dialect === 'llamacpp'
            ? 'word'
            : 'stop';
      break;
    case 'length':
      raw = dialect === 'llamacpp' ? 'limit' : 'length';
      break;
    case 'tool-calls':
      raw = 'tool_calls';
      break;
  }
  const reason = kind === 'length' ? 'length' : kind === 'tool-calls' ? 'tool-calls' : 'stop';
  const finish: FinishEvent = { type: 'finish', reason, raw };
  if (stopSequence !== undefined) finish.stopSequence = stopSequence;
  return finish;
}
