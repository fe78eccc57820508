import type { StreamEvent, TextEvent, TokenLogprob } from '../../events/stream-event.ts';
import type { Timings, Usage } from '../../events/usage.ts';

export interface ContinuedEventsOptions {
  /**
   * The text so far, sent as an assistant prefill: a server that writes it again at the start of its
   * answer (llama-server's chat route does) has it taken off; one that does not (vLLM, the simulator)
   * is passed on as it is. Undefined when nothing can be echoed (a token-id prompt, a text prompt).
   */
  echo: string | undefined;
  /** Output tokens the stream had before the seam: added to the continuation's, taken off its prompt's. */
  tokensBefore: number;
  /** The stream was in its text: a continuation that begins by reasoning started the answer again. */
  inText: boolean;
  /** Where the events go on: the stream's relay. */
  emit: (event: StreamEvent) => void;
}

/**
 * The events of a continuation, as the stream they continue needs them: no second start (the stream has
 * its id, model and opening already), the prefill's echo taken off, usage counted once for the whole
 * answer (the prompt once, every output token). A continuation that does not continue — it begins with
 * reasoning when the answer was in its text — is reported as diverged, so the stream ends loudly
 * instead of writing a second answer after the first.
 */
export class ContinuedEvents {
  readonly #options: ContinuedEventsOptions;
  #echo: string | undefined;
  /** Text held while it may still be the echo. */
  #held: TextEvent[] = [];
  #heldText = '';
  #content = false;

  constructor(options: ContinuedEventsOptions) {
    this.#options = options;
    this.#echo = options.echo === '' ? undefined : options.echo;
  }

  /** Passes an event on; `'diverged'` when the continuation started the answer again. */
  event(event: StreamEvent): 'diverged' | undefined {
    switch (event.type) {
      case 'start':
        return undefined;
      case 'usage':
        this.#options.emit({ type: 'usage', usage: this.usage(event.usage) });
        return undefined;
      case 'timings':
        this.#options.emit({ type: 'timings', timings: this.timings(event.timings) });
        return undefined;
      case 'reasoning':
        if (!this.#content && this.#options.inText && event.text !== '') return 'diverged';
        break;
      case 'text':
        if (this.#echo !== undefined && (event.choice ?? 0) === 0) {
          this.#hold(event);
          return undefined;
        }
        break;
      default:
        break;
    }
    this.flush();
    if (event.type === 'text' || event.type === 'reasoning' || event.type === 'tool-call-delta')
      this.#content = true;
    this.#options.emit(event);
    return undefined;
  }

  /** Writes text held as a possible echo (the continuation ended, or something else came). */
  flush(): void {
    if (this.#held.length === 0) return;
    this.#echo = undefined;
    this.#emitHeld(this.#heldText);
  }

  #hold(event: TextEvent): void {
    const echo = this.#echo as string;
    this.#held.push(event);
    this.#heldText += event.text;
    if (this.#heldText.length < echo.length && echo.startsWith(this.#heldText)) return;
    this.#echo = undefined;
    const rest = this.#heldText.startsWith(echo) ? this.#heldText.slice(echo.length) : this.#heldText;
    this.#emitHeld(rest);
  }

  #emitHeld(text: string): void {
    const held = this.#held;
    this.#held = [];
    this.#heldText = '';
    if (text === '') return;
    const last = held.at(-1) as TextEvent;
    const event: TextEvent = Object.assign({}, last, { text });
    const logprobs: TokenLogprob[] = [];
    const ids: number[] = [];
    for (const one of held) {
      if (one.logprobs !== undefined) logprobs.push(...one.logprobs);
      if (one.tokenIds !== undefined) ids.push(...one.tokenIds);
    }
    event.logprobs = logprobs.length > 0 ? logprobs : undefined;
    event.tokenIds = ids.length > 0 ? ids : undefined;
    this.#content = true;
    this.#options.emit(event);
  }

  /**
   * A continuation's timings with the whole answer's token counts (the tokens before the seam were
   * generated, not read as prompt); its durations are the continuing server's own.
   */
  timings(timings: Timings): Timings {
    const before = this.#options.tokensBefore;
    const merged: Timings = Object.assign({}, timings, { raw: undefined });
    if (timings.promptEvalTokens !== undefined)
      merged.promptEvalTokens = Math.max(0, timings.promptEvalTokens - before);
    if (timings.evalTokens !== undefined) merged.evalTokens = timings.evalTokens + before;
    return merged;
  }

  /** A continuation's usage as the whole answer's: the prompt once, every output token. */
  usage(usage: Usage): Usage {
    const before = this.#options.tokensBefore;
    const merged: Usage = Object.assign({}, usage, { raw: undefined });
    if (usage.inputTokens !== undefined) merged.inputTokens = Math.max(0, usage.inputTokens - before);
    if (usage.outputTokens !== undefined) merged.outputTokens = usage.outputTokens + before;
    if (
      usage.totalTokens !== undefined &&
      merged.inputTokens !== undefined &&
      merged.outputTokens !== undefined
    )
      merged.totalTokens = merged.inputTokens + merged.outputTokens;
    if (merged.cachedInputTokens !== undefined && merged.inputTokens !== undefined)
      merged.cachedInputTokens = Math.min(merged.cachedInputTokens, merged.inputTokens);
    return merged;
  }
}
