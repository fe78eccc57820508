import type { Dialect, DialectEncoder, FrameKind, MidStreamError } from '../dialects/dialect.ts';
import type { ChatRequest } from '../events/chat-request.ts';
import type { StreamEvent, TextEvent, TokenLogprob } from '../events/stream-event.ts';
import type { Timings, Usage } from '../events/usage.ts';
import type { Faults } from './faults.ts';
import type { GenerationPlan, PlannedToken } from './generate.ts';
import { hashSeed, mulberry32 } from './prng.ts';
import { planWithContinuation, type SimContinuation } from './sim-continuation.ts';
import { SimCutError } from './sim-cut-error.ts';
import { SimLogprobs } from './sim-logprobs.ts';
import type { SimOutcome } from './sim-stats.ts';
import { promptEvalMs, type SimTiming, tokenIntervalMs } from './timing.ts';
import type { SimTokenizer } from './tokenizer.ts';
import { WireWriter } from './wire-writer.ts';

/** Everything one simulated stream needs, decided when the request arrived. */
export interface SimStreamJob {
  dialect: Dialect;
  flavor: string;
  model: string;
  request: ChatRequest;
  faults: Faults;
  /** With the request's `tps`/`ttft` faults applied. */
  timing: SimTiming;
  seed: number;
  /** When the request continues an earlier answer (an assistant prefill, a token prompt). */
  continuation?: SimContinuation | undefined;
  maxTokens: number;
  /** When the request arrived (clock ms); the schedule counts from here. */
  startedAt: number;
  /** Time left until the model is loaded (the whole load for a cold model). */
  loadWaitMs: number;
  /**
   * The HTTP request; its signal says the client went away. Held for the life of the stream: undici's
   * `Request.signal` follows the caller's signal only while the `Request` object is alive (a WeakRef),
   * so holding the signal alone loses the abort once the request is garbage-collected.
   */
  source: Request;
  now: () => number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  tokenizer: Promise<SimTokenizer>;
  onEnd: (outcome: SimOutcome, outputTokens: number) => void;
  /** With a split fault, real ms between the pieces (see `SimOptions.splitGapMs`); 0 or undefined: none. */
  splitGapMs?: number | undefined;
}

/**
 * The response body of one simulated generation: the plan paced out on the schedule (load, prompt
 * evaluation, one token per interval with seeded jitter, targets counted from the request so sleeps
 * never accumulate drift), encoded by the dialect's own encoder and written through the fault layer.
 * Stops at once when the request's signal aborts or the body is cancelled.
 */
export function simStream(job: SimStreamJob): ReadableStream<Uint8Array> {
  const abort = new AbortController();
  const signal = job.source.signal;
  const onAbort = (): void => abort.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  let open = true;
  const faults = job.faults;
  const gapMs =
    faults.split !== undefined || faults.bytewise === true || faults.splitUtf8 === true
      ? (job.splitGapMs ?? 0)
      : 0;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const direct: StreamOutput = {
        write(bytes) {
          if (open) controller.enqueue(bytes);
        },
        close() {
          if (open) controller.close();
          open = false;
        },
        fail(reason) {
          if (open) controller.error(reason);
          open = false;
        },
      };
      const output = gapMs > 0 ? pacedOutput(direct, gapMs) : direct;
      void new SimRun(job, abort.signal, output).run().finally(() => {
        // Also what keeps `job.source` (the Request) reachable until the stream ends.
        job.source.signal.removeEventListener('abort', onAbort);
      });
    },
    cancel(reason) {
      open = false;
      abort.abort(reason);
    },
  });
}

interface StreamOutput {
  write(bytes: Uint8Array): void;
  close(): void;
  fail(reason: unknown): void;
}

/**
 * Writes (and the close or failure after them) in order, `gapMs` of real time apart: pieces of a split
 * write written at once leave as one TCP packet and reach a browser as one read, so the split would not
 * show. Real timers, not the simulation's clock: this is how the bytes cross the network, not the model.
 */
function pacedOutput(output: StreamOutput, gapMs: number): StreamOutput {
  const queue: (() => void)[] = [];
  let draining = false;
  const drain = (): void => {
    const next = queue.shift();
    if (next === undefined) {
      draining = false;
      return;
    }
    next();
    setTimeout(drain, gapMs);
  };
  const push = (action: () => void): void => {
    queue.push(action);
    if (!draining) {
      draining = true;
      drain();
    }
  };
  return {
    write: (bytes) => push(() => output.write(bytes)),
    close: () => push(() => output.close()),
    fail: (reason) => push(() => output.fail(reason)),
  };
}

type Interrupt = 'cut' | 'error';

/**
 * How many answers to generate: OpenAI `n` on the chat and completions routes where the imitated server
 * serves it (vLLM). llama-server refuses `n` > 1 before streaming (create-sim.ts); Ollama and TGI ignore it.
 */
function choiceCount(job: SimStreamJob): number {
  const n = job.request.n ?? 1;
  const id = job.dialect.id;
  if (n <= 1 || (id !== 'openai-chat' && id !== 'openai-completions') || job.flavor !== 'vllm') return 1;
  return n;
}

/** One answer of the request (`n` > 1 asks for several, paced out side by side) and where it is. */
interface ChoiceRun {
  /** The choice's `index`; events of a request with one answer carry none. */
  readonly choice: number | undefined;
  readonly plan: GenerationPlan;
  /** Tokens of this choice generated so far. */
  generated: number;
  /** The text so far (the `cumulative` fault writes it whole each time). */
  text: string;
  /** Tokens waiting to be written as one event (`batch`, or one). */
  group: PlannedToken[];
  /** Log probabilities of text tokens, when asked for (always in TGI, whose tokens carry them). */
  readonly logprobs: SimLogprobs | undefined;
  /** What the tokens of a text event carry that a token ending inside a character could not. */
  pendingLogprobs: TokenLogprob[];
  pendingIds: number[];
}

class SimRun {
  readonly #job: SimStreamJob;
  readonly #signal: AbortSignal;
  readonly #output: StreamOutput;
  /** Tokens generated over every choice. */
  #generated = 0;
  #lastOutput: number;
  #writer!: WireWriter;
  #encoder!: DialectEncoder;
  /** Choice 0's plan: the prompt's size and the finish the stream ends with. */
  #plan!: GenerationPlan;
  #choices: ChoiceRun[] = [];
  #tokenizer!: SimTokenizer;
  /** Text events carry their token ids (llama-server writes `tokens` on every partial event; TGI's `id`). */
  #withTokenIds = false;
  #corrupt: string | undefined;
  #corrupted = false;
  #firstTokenAt: number | undefined;

  constructor(job: SimStreamJob, signal: AbortSignal, output: StreamOutput) {
    this.#job = job;
    this.#signal = signal;
    this.#output = output;
    this.#lastOutput = job.now();
  }

  async run(): Promise<void> {
    let outcome: SimOutcome = 'failed';
    try {
      outcome = await this.#generate();
    } catch (error) {
      this.#output.fail(error);
    } finally {
      this.#job.onEnd(outcome, this.#generated + (outcome === 'completed' ? this.#endOfSequenceTokens() : 0));
    }
  }

  async #generate(): Promise<SimOutcome> {
    const job = this.#job;
    const { faults, now } = job;
    const tokenizer = await job.tokenizer;
    if (this.#signal.aborted) return this.#cancelled();
    this.#tokenizer = tokenizer;
    const dialectId = job.dialect.id;
    const count = choiceCount(job);
    const topLogprobs = job.request.logprobs;
    const wantsLogprobs = topLogprobs !== undefined || dialectId === 'tgi';
    this.#withTokenIds = dialectId === 'llamacpp' || dialectId === 'tgi';
    for (let choice = 0; choice < count; choice++) {
      const seedFor = (seed: number): number => (choice === 0 ? seed : hashSeed(seed, 'choice', choice));
      const plan = planWithContinuation(
        {
          tokenizer,
          request: job.request,
          seed: seedFor(job.seed),
          maxTokens: job.maxTokens,
          faults,
          dialect: dialectId,
          flavor: job.flavor,
        },
        job.continuation,
        seedFor,
      );
      const pool = plan.tokens.flatMap((token) => (token.bytes === undefined ? [] : [token.bytes]));
      this.#choices.push({
        choice: count > 1 ? choice : undefined,
        plan,
        generated: 0,
        text: '',
        group: [],
        logprobs: wantsLogprobs
          ? new SimLogprobs(
              mulberry32(hashSeed(job.seed, 'logprobs', choice)),
              tokenizer,
              pool,
              topLogprobs ?? 0,
            )
          : undefined,
        pendingLogprobs: [],
        pendingIds: [],
      });
    }
    const plan = (this.#choices[0] as ChoiceRun).plan;
    this.#plan = plan;
    this.#encoder = job.dialect.createEncoder({
      flavor: job.flavor,
      model: job.model,
      includeUsage: job.request.includeUsage === true,
      sampling: { seed: job.request.seed, temperature: job.request.temperature, maxTokens: job.maxTokens },
      now,
    });
    this.#writer = new WireWriter({
      framing: this.#encoder.framing,
      sseSpace: this.#encoder.sseSpace,
      faults,
      rng: mulberry32(hashSeed(job.seed, 'split')),
      now,
      write: (bytes) => this.#output.write(bytes),
    });

    const jitter = mulberry32(hashSeed(job.seed, 'timing'));
    const total = Math.max(...this.#choices.map((run) => run.plan.tokens.length));
    // `die-after` is `cut-after` under a replica-level name; with both, the earlier cut wins.
    const cutAfter =
      faults.cutAfter === undefined || faults.dieAfter === undefined
        ? (faults.cutAfter ?? faults.dieAfter)
        : Math.min(faults.cutAfter, faults.dieAfter);
    const cutAt = cutAfter === undefined ? undefined : Math.min(cutAfter, total);
    const errorAt = faults.errorAfter === undefined ? undefined : Math.min(faults.errorAfter, total);
    const stallAt = faults.stall === undefined ? undefined : (faults.stallAfter ?? Math.floor(total / 2));
    const batch = Math.max(1, Math.floor(faults.batch ?? 1));
    const firstAt = job.startedAt + job.loadWaitMs + promptEvalMs(job.timing, plan.inputTokens);
    let target = firstAt;

    for (let i = 0; i <= total; i++) {
      const interrupt: Interrupt | undefined = i === cutAt ? 'cut' : i === errorAt ? 'error' : undefined;
      if (interrupt !== undefined) {
        for (const run of this.#choices) this.#emitGroup(run);
        return this.#interrupt(interrupt);
      }
      if (i === total) break;
      if (i === stallAt && faults.stall !== undefined) target += faults.stall;
      if (!(await this.#waitUntil(target))) return this.#cancelled();
      if (i === 0) this.#start();
      for (const run of this.#choices) {
        const token = run.plan.tokens[i];
        if (token === undefined) continue;
        this.#generated += 1;
        run.generated += 1;
        run.group.push(token);
        const next = run.plan.tokens[i + 1];
        if (
          run.group.length >= batch ||
          next === undefined ||
          next.channel !== token.channel ||
          i + 1 === cutAt ||
          i + 1 === errorAt
        ) {
          this.#emitGroup(run);
          // Encoders that hold a piece to merge it into the finish chunk: only the last token's stays held.
          if (next !== undefined || run.choice !== undefined) this.#flush();
        }
        // A further choice ends when its tokens do; the encoder writes its finish in its place.
        if (next === undefined && run.choice !== undefined && run.choice !== 0)
          this.#event(Object.assign({}, run.plan.finish, { choice: run.choice }));
      }
      target += tokenIntervalMs(job.timing, jitter);
    }

    if (total === 0) {
      if (!(await this.#waitUntil(firstAt))) return this.#cancelled();
      this.#start();
      for (const run of this.#choices)
        if (run.choice !== undefined && run.choice !== 0)
          this.#event(Object.assign({}, run.plan.finish, { choice: run.choice }));
    }
    this.#event(plan.finish);
    if (faults.noUsage !== true) {
      this.#event({ type: 'usage', usage: this.#usage() });
      this.#event({ type: 'timings', timings: this.#timings() });
    }
    const payloads: [string, FrameKind | undefined][] = [];
    this.#encoder.end((data, kind) => payloads.push([data, kind]));
    if (faults.noDone === true) {
      const sentinel = payloads.findIndex(([data]) => data === '[DONE]');
      if (sentinel === -1) payloads.pop();
      else payloads.splice(sentinel, 1);
    }
    for (const [data, kind] of payloads) this.#writer.payload(data, kind);
    this.#writer.flush();
    this.#output.close();
    return 'completed';
  }

  /** Sleeps until `target` on the clock, writing keepalives through the silence. False when aborted. */
  async #waitUntil(target: number): Promise<boolean> {
    const { now, sleep, faults } = this.#job;
    const keepalive = this.#writer.framing === 'sse' ? faults.keepalive : undefined;
    for (;;) {
      if (this.#signal.aborted) return false;
      const at = now();
      if (at >= target) return true;
      if (keepalive !== undefined && this.#lastOutput + keepalive < target) {
        const ping = this.#lastOutput + keepalive;
        if (ping > at) await sleep(ping - at, this.#signal);
        if (this.#signal.aborted) return false;
        this.#writer.comment();
        // Counted from when the ping was due (no drift); an overdue ping goes out once, not in a burst.
        this.#lastOutput = Math.max(ping, at);
        continue;
      }
      await sleep(target - at, this.#signal);
      return !this.#signal.aborted;
    }
  }

  #start(): void {
    this.#firstTokenAt = this.#job.now();
    this.#event({ type: 'start', model: this.#job.model, created: Math.floor(this.#job.now() / 1000) });
    // llama-server's partial events carry the prompt size from the first one (`tokens_evaluated`), so
    // the count does not jump from 0 on the final event; Anthropic's `message_start` carries it too.
    const early = this.#job.dialect.id === 'llamacpp' || this.#job.dialect.id === 'anthropic-messages';
    if (early && this.#job.faults.noUsage !== true)
      this.#event({ type: 'usage', usage: { inputTokens: this.#plan.inputTokens } });
  }

  /** Writes the events of a choice's group of tokens of one channel (`batch` tokens, or one). */
  #emitGroup(run: ChoiceRun): void {
    const group = run.group;
    const first = group[0];
    if (first === undefined) return;
    run.group = [];
    const choice = run.choice;
    const text = group.map((token) => token.text).join('');
    if (first.channel === 'reasoning') {
      if (text !== '') this.#event({ type: 'reasoning', text, choice });
      return;
    }
    if (first.channel === 'text') {
      for (const token of group) {
        if (run.logprobs !== undefined) run.pendingLogprobs.push(run.logprobs.score(token));
        const id = this.#withTokenIds && token.bytes !== undefined ? this.#idOf(token.bytes) : undefined;
        if (id !== undefined) run.pendingIds.push(id);
      }
      if (text === '') return;
      run.text += text;
      const faults = this.#job.faults;
      const sent = faults.cumulative === true ? run.text : text;
      if (faults.invalidUtf8 === true && this.#corrupt === undefined && !this.#corrupted) {
        // Mid-answer, in a text value every JSON writer escapes alike, so the byte lands inside it.
        const mid = run.generated * 2 >= run.plan.tokens.length;
        if (mid && /\p{L}/u.test(sent) && !/[<>&\u0000-\u0009\u000b-\u001f\u2028\u2029]/u.test(sent))
          this.#corrupt = sent;
      }
      const event: TextEvent = { type: 'text', text: sent, choice };
      if (run.pendingLogprobs.length > 0) {
        event.logprobs = run.pendingLogprobs;
        run.pendingLogprobs = [];
      }
      if (run.pendingIds.length > 0) {
        event.tokenIds = run.pendingIds;
        run.pendingIds = [];
      }
      this.#event(event);
      return;
    }
    const call = run.plan.toolCall;
    if (call === undefined) return;
    const startsCall = run.generated - group.length === run.plan.reasoningTokens;
    if (startsCall) {
      this.#event({
        type: 'tool-call-delta',
        index: call.index,
        id: call.id,
        name: call.name,
        argumentsDelta: text,
        choice,
      });
    } else if (text !== '') {
      this.#event({ type: 'tool-call-delta', index: call.index, argumentsDelta: text, choice });
    }
    if (call.complete && run.generated === run.plan.tokens.length) {
      this.#event({
        type: 'tool-call',
        index: call.index,
        id: call.id,
        name: call.name,
        arguments: call.arguments,
        input: call.input,
        choice,
      });
    }
  }

  #idOf(bytes: Uint8Array): number | undefined {
    return this.#tokenizer.idOf(bytes);
  }

  #event(event: StreamEvent): void {
    this.#encoder.event(event, (data, kind) => this.#write(data, kind));
  }

  #write(data: string, kind: FrameKind | undefined): void {
    if (this.#writer.payload(data, kind, this.#corrupt)) {
      this.#corrupted = true;
      this.#corrupt = undefined;
    }
    this.#lastOutput = this.#job.now();
  }

  #flush(): void {
    this.#encoder.flush?.((data, kind) => this.#write(data, kind));
  }

  #interrupt(kind: Interrupt): SimOutcome {
    if (kind === 'cut') {
      this.#flush();
      this.#writer.flush();
      this.#output.fail(new SimCutError(this.#generated));
      return 'cut';
    }
    const error: MidStreamError = {
      message: `tokenwire sim: simulated failure after ${this.#generated} tokens (fault error-after)`,
      status: 500,
    };
    this.#encoder.error(error, (data, kind) => this.#writer.payload(data, kind));
    this.#writer.flush();
    this.#output.close();
    return 'failed';
  }

  #cancelled(): SimOutcome {
    this.#output.fail(this.#signal.reason ?? new Error('aborted'));
    return 'cancelled';
  }

  #usage(): Usage {
    const inputTokens = this.#plan.inputTokens;
    const outputTokens = this.#generated + this.#endOfSequenceTokens();
    const usage: Usage = { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens };
    let reasoningTokens = 0;
    for (const run of this.#choices) reasoningTokens += run.plan.reasoningTokens;
    if (reasoningTokens > 0) usage.reasoningTokens = reasoningTokens;
    return usage;
  }

  /**
   * llama-server counts the end-of-sequence token it sampled (its own partial event, `content: ""`), so
   * its final `tokens_predicted` equals that last partial event's, never one less.
   */
  #endOfSequenceTokens(): number {
    if (this.#job.dialect.id !== 'llamacpp') return 0;
    const raw = this.#plan.finish.raw;
    return raw === 'eos' || raw === 'stopped_eos' ? 1 : 0;
  }

  #timings(): Timings {
    const job = this.#job;
    const end = job.now();
    const first = this.#firstTokenAt ?? end;
    return {
      loadMs: job.loadWaitMs,
      promptEvalMs: Math.max(0, first - job.startedAt - job.loadWaitMs),
      promptEvalTokens: this.#plan.inputTokens,
      evalMs: Math.max(0, end - first),
      evalTokens: this.#generated + this.#endOfSequenceTokens(),
      totalMs: Math.max(0, end - job.startedAt),
    };
  }
}
