import type { StartEvent, StreamEvent } from '../../events/stream-event.ts';

/** Where an answer stood when its upstream failed: what a continuation must go on from. */
export type AnswerPlace = 'start' | 'text' | 'reasoning' | 'tool-call';

/**
 * What a client-facing stream has written of its answer, kept while another replica may continue it
 * (`continueOnFailure`): the text and reasoning so far, where the answer stood, the generated token ids
 * when every piece of text came with its ids (llama.cpp `return_tokens`), and how many content events
 * went out (the output tokens before a seam when the server gave no ids: llama-server, vLLM and the
 * simulator stream one token per event).
 */
export class AnswerSoFar {
  start: StartEvent | undefined;
  text = '';
  reasoning = '';
  place: AnswerPlace = 'start';
  /** Content events written. */
  chunks = 0;
  /** Text and reasoning events written (an encoder that takes over counts them: llama.cpp `tokens_predicted`). */
  #textEvents = 0;
  #reasoningEvents = 0;
  /** The generated ids, while every text event so far carried them; undefined once one did not. */
  ids: number[] | undefined;
  /** A tool call was written (its arguments cannot be taken back). */
  toolCall = false;
  /** A choice other than the first was written (`n` > 1): not continued. */
  otherChoices = false;
  /** The answer's finish was written: only its ending was lost. */
  finished = false;

  /** `trackIds`: the upstream gives token ids with its text (llama.cpp `/completion` with `return_tokens`). */
  constructor(trackIds: boolean) {
    this.ids = trackIds ? [] : undefined;
  }

  /** The output tokens written so far. */
  get tokens(): number {
    return this.ids?.length ?? this.chunks;
  }

  observe(event: StreamEvent): void {
    switch (event.type) {
      case 'start':
        this.start ??= event;
        return;
      case 'text':
        if ((event.choice ?? 0) !== 0) {
          this.otherChoices = true;
          return;
        }
        if (event.text === '') return;
        this.text += event.text;
        this.place = 'text';
        this.chunks += 1;
        this.#textEvents += 1;
        if (this.ids !== undefined) {
          if (event.tokenIds === undefined) this.ids = undefined;
          else for (const id of event.tokenIds) this.ids.push(id);
        }
        return;
      case 'reasoning':
        if ((event.choice ?? 0) !== 0) this.otherChoices = true;
        else if (event.text !== '') {
          this.reasoning += event.text;
          this.place = 'reasoning';
          this.chunks += 1;
          this.#reasoningEvents += 1;
          // Reasoning read apart from the text comes with no ids: the ids known are no longer all of them.
          this.ids = undefined;
        }
        return;
      case 'tool-call-delta':
      case 'tool-call':
        if ((event.choice ?? 0) !== 0) this.otherChoices = true;
        this.toolCall = true;
        this.place = 'tool-call';
        this.chunks += 1;
        return;
      case 'finish':
        if ((event.choice ?? 0) !== 0) this.otherChoices = true;
        else this.finished = true;
        return;
      default:
        return;
    }
  }

  /**
   * The answer so far as events that bring an encoder to where the client's stream stands (an encoder
   * that takes over a stream relayed as the upstream wrote it): its start (id, model), the reasoning and
   * the text in as many events as went out (encoders that count events count the same), not as they
   * were cut (those bytes are written nowhere).
   */
  history(): StreamEvent[] {
    const events: StreamEvent[] = [];
    if (this.start !== undefined) events.push(this.start);
    for (const text of pieces(this.reasoning, this.#reasoningEvents))
      events.push({ type: 'reasoning', text });
    for (const text of pieces(this.text, this.#textEvents)) events.push({ type: 'text', text });
    return events;
  }
}

/** `text` in `count` non-empty pieces (one character each, then the rest), fewer when it is shorter. */
function pieces(text: string, count: number): string[] {
  if (text === '' || count < 1) return [];
  const chars = Array.from(text);
  const out = chars.slice(0, Math.min(count, chars.length) - 1);
  out.push(chars.slice(out.length).join(''));
  return out;
}
