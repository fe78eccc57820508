/**
 * How exact "continue on a sibling" is against two real llama-server processes (issue 32, "How it is
 * shown", second bullet). A script run by hand — `npx tsx bench/continue-real.ts` — not part of
 * `npm test` or `npm run bench`: it starts two llama-servers (the same tiny model) and `kill -9`s one.
 *
 * For each path, N runs with different prompts (temperature 0, `--max-tokens` tokens, `cache_prompt: false`):
 * - `tokens`: upstreams speak `llamacpp`, the client posts llama.cpp `/completion` (token-exact seam);
 * - `tokens-chat`: upstreams speak `llamacpp`, the client posts `/v1/chat/completions` (routed to
 *   `/completion`: token-exact too when the gateway kept the ids);
 * - `prefill`: upstreams speak `openai-chat`, the client posts `/v1/chat/completions` (the text so far
 *   as a last assistant message; llama-server re-tokenizes it).
 * A run: (1) the reference, the same request through the gateway with no failure; (2) the same request
 * streamed through a fresh gateway (`continueOnFailure`, round-robin), and after `--kill-after` content
 * tokens the replica named in `x-tokenwire-upstream` gets `kill -9`; the stream is read to its end and
 * its text compared byte for byte with the reference. The killed server is restarted before the next run.
 *
 * Where the kill is timed (`--cut`):
 * - `client` (default): `kill -9` when the client has read k content tokens. The tiny model is fast, so
 *   the server has often written a few more by then: the seam lands after k to ~25 tokens, and an answer
 *   the server finished before the signal is not continued at all (listed, with its outcome).
 * - `wire`: the gateway reaches each llama-server through a fetch that counts the content events of the
 *   upstream's body; at the k-th it passes that event on, `kill -9`s the server, waits for it to exit and
 *   ends the body with an error (as undici does for a reset connection): the seam is after exactly k
 *   tokens, the cut a slow (real-size) model would get.
 *
 * For each mismatch it prints where the texts diverge and asks the surviving server for the top two
 * tokens there (`n_probs: 2`): on the reference's own decoding (one token at a time) and on the prompt
 * plus the reference's tokens before the divergence evaluated as one prompt (what a token-exact
 * continuation computes), so a numeric near-tie shows; for the prefill path, how llama-server
 * re-tokenizes the text so far (the seam inside a word).
 *
 * Flags: `--runs N` (20), `--max-tokens N` (32), `--kill-after K` (8), `--cut client|wire`,
 * `--paths tokens,tokens-chat,prefill`, `--out FILE` (test-output/continue-real.json). A prompt whose
 * reference fails (llama-server's own mid-stream 500 on some outputs) is listed and replaced by the next.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { serve } from '../src/node/serve.ts';
import { createGateway, type Gateway, type RequestLog } from '../src/server/create-gateway.ts';
import type { Upstream } from '../src/server/upstream/upstream.ts';
import { sseData } from './sse-data.ts';
import { quantile } from './stats.ts';

const SERVER_DIR = '/work/shared/real-servers/llama-server-b10108';
const PORTS = [18091, 18092] as const;
const MODEL = 'tiny.gguf';

type PathId = 'tokens' | 'tokens-chat' | 'prefill';

interface Server {
  name: string;
  port: number;
  url: string;
  child: ChildProcess | undefined;
}

interface Read {
  text: string;
  /** Per content event: its text and (llama.cpp) token ids. */
  pieces: { text: string; ids?: number[] }[];
  upstream: string;
  status: number;
  error?: string;
  done: boolean;
}

interface TopTwo {
  top: { token: string; id: number; logprob: number }[];
  gap: number;
}

interface Mismatch {
  /** Where the texts diverge (UTF-16 index), and 30 characters either side of it in each. */
  index: number;
  reference: string;
  run: string;
  /** Output tokens before the seam (the log's `afterTokens`). */
  seam?: number;
  /** The reference's token at the divergence (0-based), and its top two as decoded one token at a time. */
  tokenIndex?: number;
  referenceTopTwo?: TopTwo;
  /**
   * The continuation replayed on the survivor: the prompt it got (token-exact: prompt + the reference's ids
   * before the seam; prefill: the chat template with the text so far as the assistant's, re-tokenized),
   * its text up to the divergence, and its top two at the divergent token.
   */
  replayTopTwo?: TopTwo;
  replayMatchesRun?: boolean;
  /** Ids among the tokens before the seam that have no text (llama-server streams them as `content: ""`). */
  silentTokens?: number[];
  /** Prefill path: the ids the first replica generated against how llama-server re-tokenizes that text. */
  retokenized?: { generated: string[]; retokenized: string[]; firstDifference: number };
  cause: string;
}

interface Run {
  path: PathId;
  run: number;
  prompt: string;
  /** \`x-tokenwire-upstream\` of the run, and the server killed ('' when the answer ended first). */
  firstUpstream?: string;
  killed: string;
  /** The reference failed: the prompt is left out of the figures. */
  skipped?: string;
  identical: boolean;
  referenceLength: number;
  /** Content events of the reference (one token each): an answer of k or fewer tokens has no seam to cross. */
  referenceTokens: number;
  runLength: number;
  continuations: NonNullable<RequestLog['continuations']>;
  /** The gateway's calls to the servers during the run (\`wire\` mode): name and path. */
  upstreamCalls?: string[];
  outcome?: string;
  error?: string;
  mismatch?: Mismatch;
}

const SUBJECTS = (
  'river stone garden window lantern harbor meadow copper violin thunder pepper marble canyon ' +
  'orchard falcon velvet compass glacier saffron timber beacon cobalt thistle quartz ember willow'
).split(' ');

function promptFor(i: number): string {
  const a = SUBJECTS[i % SUBJECTS.length] ?? 'river';
  const b = SUBJECTS[(i * 7 + 3) % SUBJECTS.length] ?? 'stone';
  return `Story ${i + 1}. Once upon a time, near the ${a}, a child found a ${b} and said`;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function startServer(server: Server): Promise<void> {
  const child = spawn(
    join(SERVER_DIR, 'bin/llama-server'),
    [
      '-m',
      join(SERVER_DIR, MODEL),
      '--host',
      '127.0.0.1',
      '--port',
      String(server.port),
      '-t',
      '1',
      '-c',
      '1024',
      '-np',
      '2',
      '--metrics',
      '--slots',
    ],
    { stdio: 'ignore' },
  );
  server.child = child;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${server.name} exited with ${child.exitCode}`);
    try {
      const response = await fetch(`${server.url}/health`);
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${server.name} did not get healthy within 60 s`);
}

async function killServer(server: Server): Promise<void> {
  const child = server.child;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

/** Shared by the upstreams' fetches of one run: only the run's first streamed answer is cut. */
interface CutState {
  armed: boolean;
  killAfter: number;
  /** The gateway's calls to the servers: name and path. */
  calls: string[];
  /** The server killed, once it is. */
  killed: string | undefined;
}

/**
 * The upstream's fetch in `wire` mode: counts the content events of the body and, at the k-th, kills
 * the server and errors the body after that event (the bytes a slow model would not have written yet
 * are not passed on).
 */
function cuttingFetch(server: Server, state: CutState): Upstream['fetch'] {
  return async (request: Request) => {
    state.calls.push(`${server.name} ${new URL(request.url).pathname}`);
    const response = await fetch(request);
    // Only a streamed answer is cut (not the gateway's `/apply-template` or `/tokenize` calls).
    const path = new URL(request.url).pathname;
    const streamed = path === '/completion' || path === '/v1/chat/completions';
    if (!state.armed || !streamed || response.body === null) return response;
    state.armed = false;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const encoder = new TextEncoder();
    let buffer = '';
    let seen = 0;
    let cut = false;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (cut) return;
        const { done, value } = await reader.read();
        if (done) {
          if (buffer !== '') controller.enqueue(encoder.encode(buffer));
          controller.close();
          return;
        }
        buffer += decoder.decode(value, { stream: true });
        let out = '';
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const event = buffer.slice(0, end + 2);
          buffer = buffer.slice(end + 2);
          out += event;
          if (contentOf(event) !== '') seen += 1;
          if (seen >= state.killAfter) {
            cut = true;
            state.killed = server.name;
            controller.enqueue(encoder.encode(out));
            await killServer(server);
            await reader.cancel().catch(() => {});
            controller.error(new TypeError('terminated', { cause: new Error('other side closed') }));
            return;
          }
          end = buffer.indexOf('\n\n');
        }
        if (out !== '') controller.enqueue(encoder.encode(out));
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

/** The content text of one SSE event (llama.cpp `content` or OpenAI chat `delta.content`), else ''. */
function contentOf(event: string): string {
  let text = '';
  for (const line of event.split('\n')) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice(5).trim();
    if (data === '' || data === '[DONE]') continue;
    try {
      const chunk = JSON.parse(data) as {
        content?: unknown;
        stop?: boolean;
        choices?: { delta?: { content?: unknown } }[];
      };
      if (typeof chunk.content === 'string') text += chunk.content;
      const delta = chunk.choices?.[0]?.delta?.content;
      if (typeof delta === 'string') text += delta;
    } catch {
      // a comment or a partial line: not content
    }
  }
  return text;
}

/** Streams a request to the gateway; calls `onToken(count)` after each content event. */
async function readStream(
  url: string,
  body: unknown,
  onToken?: (count: number, upstream: string) => void,
): Promise<Read> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const upstream = response.headers.get('x-tokenwire-upstream') ?? '';
  const read: Read = { text: '', pieces: [], upstream, status: response.status, done: false };
  if (!response.ok || response.body === null) {
    read.error = `HTTP ${response.status}: ${(await response.text()).slice(0, 300)}`;
    return read;
  }
  for await (const data of sseData(response.body)) {
    if (data === '[DONE]') {
      read.done = true;
      continue;
    }
    const chunk = JSON.parse(data) as {
      content?: string;
      tokens?: number[];
      stop?: boolean;
      error?: { message?: string };
      choices?: { delta?: { content?: string | null }; finish_reason?: string | null }[];
    };
    if (chunk.error !== undefined) read.error = chunk.error.message ?? JSON.stringify(chunk.error);
    let text = '';
    if (typeof chunk.content === 'string') text = chunk.content;
    const delta = chunk.choices?.[0]?.delta?.content;
    if (typeof delta === 'string') text += delta;
    if (chunk.stop === true || typeof chunk.choices?.[0]?.finish_reason === 'string') read.done = true;
    if (text !== '') {
      read.text += text;
      read.pieces.push(chunk.tokens === undefined ? { text } : { text, ids: chunk.tokens });
      onToken?.(read.pieces.length, upstream);
    }
  }
  return read;
}

async function postJson<T>(url: string, body: unknown): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok)
    throw new Error(`${url}: HTTP ${response.status} ${(await response.text()).slice(0, 200)}`);
  return (await response.json()) as T;
}

interface Probability {
  id: number;
  token: string;
  logprob: number;
  top_logprobs: { id: number; token: string; logprob: number }[];
}

function topTwo(p: Probability | undefined): TopTwo | undefined {
  if (p === undefined) return undefined;
  const top = p.top_logprobs.slice(0, 2).map((t) => ({ token: t.token, id: t.id, logprob: t.logprob }));
  return { top, gap: top.length < 2 ? Number.NaN : (top[0]?.logprob ?? 0) - (top[1]?.logprob ?? 0) };
}

/** The rendered prompt a llama.cpp `/completion` gets for this request (the chat template for chats). */
async function renderedPrompt(server: Server, path: PathId, prompt: string): Promise<string> {
  if (path === 'tokens') return prompt;
  const rendered = await postJson<{ prompt: string }>(`${server.url}/apply-template`, {
    messages: [{ role: 'user', content: prompt }],
  });
  return rendered.prompt;
}

/** Explains a divergence by asking the surviving server (see the file's comment). */
async function explain(
  survivor: Server,
  path: PathId,
  prompt: string,
  reference: string,
  run: string,
  index: number,
  seam: number | undefined,
  soFar: string,
  maxTokens: number,
): Promise<Mismatch> {
  const mismatch: Mismatch = {
    index,
    reference: JSON.stringify(reference.slice(Math.max(0, index - 30), index + 30)),
    run: JSON.stringify(run.slice(Math.max(0, index - 30), index + 30)),
    cause: '',
  };
  if (seam !== undefined) mismatch.seam = seam;
  const rendered = await renderedPrompt(survivor, path, prompt);
  // The reference decoded one token at a time, with the top two at each step.
  const direct = await postJson<{ content: string; completion_probabilities: Probability[] }>(
    `${survivor.url}/completion`,
    { prompt: rendered, n_predict: maxTokens, temperature: 0, n_probs: 2, cache_prompt: false },
  );
  const probs = direct.completion_probabilities;
  if (direct.content !== reference) mismatch.cause = 'the direct reference differs from the gateway one; ';
  const tokenIndex = tokenAt(probs, index);
  if (tokenIndex < 0 || seam === undefined) {
    mismatch.cause += seam === undefined ? 'not continued' : 'divergence past the reference tokens';
    return mismatch;
  }
  mismatch.tokenIndex = tokenIndex;
  const ref = topTwo(probs[tokenIndex]);
  if (ref !== undefined) mismatch.referenceTopTwo = ref;
  // The reference's tokens before the seam: those whose text makes up what the client had (a token
  // with no text, a special token llama-server does not render, is among them but adds nothing).
  let upTo = 0;
  for (let at = 0; upTo < probs.length && at < soFar.length; upTo++) at += (probs[upTo]?.token ?? '').length;
  const before = probs.slice(0, upTo);
  const silent = before.filter((p) => p.token === '').map((p) => p.id);
  if (silent.length > 0) mismatch.silentTokens = silent;
  // What the gateway's token-exact continuation sends: the ids of the text events it saw.
  const generated = before.filter((p) => p.token !== '').map((p) => p.id);
  // The prompt the continuation got: ids (token-exact) or the prefilled template as text (re-tokenized).
  let replayPrompt: (string | number)[] | string = [rendered, ...generated];
  if (path === 'prefill') {
    const prefilled = await postJson<{ prompt: string }>(`${survivor.url}/apply-template`, {
      messages: [
        { role: 'user', content: prompt },
        { role: 'assistant', content: soFar },
      ],
    });
    replayPrompt = prefilled.prompt;
    type Tokens = { tokens: { id: number; piece: string }[] };
    const tokenize = (content: string) =>
      postJson<Tokens>(`${survivor.url}/tokenize`, { content, add_special: true, with_pieces: true });
    const whole = (await tokenize(prefilled.prompt)).tokens;
    const head = (await tokenize(rendered)).tokens;
    const expected = [...head.map((t) => t.id), ...generated];
    let first = 0;
    while (first < expected.length && expected[first] === whole[first]?.id) first++;
    const pieceOf = (id: number) => probs.find((p) => p.id === id)?.token ?? String(id);
    mismatch.retokenized = {
      firstDifference: first - head.length,
      generated: generated.slice(Math.max(0, first - head.length - 1)).map(pieceOf),
      retokenized: whole.slice(Math.max(head.length, first - 1)).map((t) => t.piece),
    };
  }
  const replay = await postJson<{ content: string; completion_probabilities: Probability[] }>(
    `${survivor.url}/completion`,
    {
      prompt: replayPrompt,
      n_predict: Math.max(1, tokenIndex - upTo + 1),
      temperature: 0,
      n_probs: 2,
      cache_prompt: false,
    },
  );
  const rep = topTwo(replay.completion_probabilities[tokenIndex - upTo]);
  if (rep !== undefined) mismatch.replayTopTwo = rep;
  // The run after the seam starts with the replay's text up to the divergence (a replay that reproduces it).
  mismatch.replayMatchesRun = run.slice(soFar.length).startsWith(replay.content);
  const flipped = ref !== undefined && rep !== undefined && ref.top[0]?.id !== rep.top[0]?.id;
  const show = (t: TopTwo | undefined) =>
    t === undefined
      ? '-'
      : t.top.map((x) => `${JSON.stringify(x.token)} ${x.logprob.toFixed(4)}`).join(' vs ');
  const retok =
    mismatch.retokenized !== undefined && mismatch.retokenized.firstDifference < generated.length
      ? `the text so far re-tokenizes differently from token ${mismatch.retokenized.firstDifference} ` +
        `(${JSON.stringify(mismatch.retokenized.generated)} generated, ` +
        `${JSON.stringify(mismatch.retokenized.retokenized)} re-tokenized); `
      : '';
  const silentNote =
    silent.length > 0
      ? `the ${silent.length} token(s) before the seam with no text (ids ${silent.join(', ')}) are missing ` +
        `from the continuation's context${mismatch.replayMatchesRun === true ? ' (the replay without them reproduces the run)' : ''}; `
      : '';
  mismatch.cause +=
    `${silentNote}${retok}token ${tokenIndex} (seam after ${seam}): reference ${show(ref)}; continuation replayed ` +
    `${show(rep)}${flipped ? ' (the top two swap)' : ''}`;
  return mismatch;
}

/** The index of the token holding the character at `index` of the joined token texts, or -1. */
function tokenAt(probs: readonly Probability[], index: number): number {
  let at = 0;
  for (let i = 0; i < probs.length; i++) {
    at += (probs[i]?.token ?? '').length;
    if (at > index) return i;
  }
  return -1;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '20' },
      'max-tokens': { type: 'string', default: '32' },
      'kill-after': { type: 'string', default: '8' },
      cut: { type: 'string', default: 'client' },
      paths: { type: 'string', default: 'tokens,tokens-chat,prefill' },
      out: { type: 'string', default: 'test-output/continue-real.json' },
    },
  });
  const runs = Number(values.runs);
  const maxTokens = Number(values['max-tokens']);
  const killAfter = Number(values['kill-after']);
  const cut = values.cut === 'wire' ? 'wire' : 'client';
  const paths = values.paths.split(',') as PathId[];
  const servers: Server[] = PORTS.map((port, i) => ({
    name: `llama-${i + 1}`,
    port,
    url: `http://127.0.0.1:${port}`,
    child: undefined,
  }));
  const results: Run[] = [];
  const stopAll = async () => {
    for (const server of servers) await killServer(server);
  };
  process.once('SIGINT', () => {
    void stopAll().then(() => process.exit(130));
  });
  try {
    await Promise.all(servers.map(startServer));
    for (const path of paths) {
      // A prompt whose reference fails is left out (and listed); the next one takes its place.
      let done = 0;
      for (let i = 0; done < runs && i < runs * 2; i++) {
        for (const server of servers)
          if (
            server.child === undefined ||
            server.child.exitCode !== null ||
            server.child.signalCode !== null
          )
            await startServer(server);
        results.push(await oneRun(servers, path, i, maxTokens, killAfter, cut));
        const last = results[results.length - 1];
        if (last !== undefined && last.skipped === undefined) done++;
        if (last !== undefined)
          process.stderr.write(
            `${path} #${i}: ${last.skipped !== undefined ? `skipped (${last.skipped})` : last.identical ? 'identical' : 'DIFFERENT'} continued=${last.continuations
              .map((c) => `${c.result}/${c.path}@${c.afterTokens}`)
              .join(',')}${last.error === undefined ? '' : ` error=${last.error}`}\n`,
          );
      }
    }
  } finally {
    await stopAll();
  }
  const summary = paths.map((path) => {
    const all = results.filter((r) => r.path === path);
    const own = all.filter((r) => r.skipped === undefined);
    const gaps = own.flatMap((r) => r.continuations.flatMap((c) => (c.gapMs === undefined ? [] : [c.gapMs])));
    return {
      path,
      runs: own.length,
      identical: own.filter((r) => r.identical).length,
      continued: own.filter((r) => r.continuations.some((c) => c.result === 'continued')).length,
      /** The answer ended (EOS) before the k-th token: nothing was killed, there is no seam. */
      endedBeforeCut: own
        .filter((r) => r.killed === '')
        .map((r) => ({ run: r.run, tokens: r.referenceTokens })),
      skipped: all.flatMap((r) => (r.skipped === undefined ? [] : [{ run: r.run, reason: r.skipped }])),
      notContinued: own
        .filter((r) => r.killed !== '' && !r.continuations.some((c) => c.result === 'continued'))
        .map((r) => ({
          run: r.run,
          outcome: r.outcome,
          reasons: r.continuations.map((c) => `${c.result}: ${c.reason ?? ''}`),
        })),
      gapP50Ms: gaps.length === 0 ? undefined : quantile(gaps, 0.5),
      gapP99Ms: gaps.length === 0 ? undefined : quantile(gaps, 0.99),
      mismatches: own.flatMap((r) =>
        r.mismatch === undefined ? [] : [{ runIndex: r.run, prompt: r.prompt, ...r.mismatch }],
      ),
    };
  });
  const settings = { runs, maxTokens, killAfter, cut, model: MODEL, server: SERVER_DIR };
  mkdirSync('test-output', { recursive: true });
  writeFileSync(values.out, `${JSON.stringify({ settings, summary, results }, null, 2)}\n`);
  const ms = (v: number | undefined) => (v === undefined ? '-' : `${v.toFixed(1)} ms`);
  const lines = [`continue-real: ${JSON.stringify(settings)}`];
  for (const s of summary) {
    lines.push(
      `  ${s.path}: runs ${s.runs}, byte-identical ${s.identical}, continued ${s.continued}, ` +
        `gap p50 ${ms(s.gapP50Ms)} p99 ${ms(s.gapP99Ms)}`,
    );
    for (const e of s.endedBeforeCut)
      lines.push(`    #${e.run}: the answer ended after ${e.tokens} tokens, before the cut (no seam)`);
    for (const k of s.skipped) lines.push(`    skipped #${k.run}: ${k.reason}`);
    for (const n of s.notContinued)
      lines.push(`    not continued #${n.run}: ${n.outcome} ${n.reasons.join('; ')}`);
    for (const m of s.mismatches)
      lines.push(
        `    mismatch #${m.runIndex} at ${m.index}: reference ${m.reference}\n` +
          `                    run       ${m.run}\n      -> ${m.cause}`,
      );
  }
  lines.push(`written ${values.out}`, '');
  process.stdout.write(lines.join('\n'));
}

async function oneRun(
  servers: Server[],
  path: PathId,
  i: number,
  maxTokens: number,
  killAfter: number,
  cut: 'wire' | 'client',
): Promise<Run> {
  const prompt = promptFor(i);
  const logs: RequestLog[] = [];
  // One state for both: only the first attempt of the run is cut, never the continuation.
  const state: CutState = { armed: false, killAfter, calls: [], killed: undefined };
  const upstreams: Upstream[] = servers.map((server) => {
    const upstream: Upstream = {
      name: server.name,
      url: server.url,
      dialects: path === 'prefill' ? ['openai-chat'] : ['llamacpp'],
      models: [MODEL],
      anyModelName: true,
    };
    if (cut === 'wire') upstream.fetch = cuttingFetch(server, state);
    return upstream;
  });
  const gateway: Gateway = createGateway({
    upstreams,
    continueOnFailure: true,
    balance: 'round-robin',
    healthIntervalMs: 0,
    onLog: (record) => logs.push(record),
  });
  const served = await serve((request) => gateway.fetch(request), { port: 0 });
  const chat = path !== 'tokens';
  const url = `${served.url}${chat ? '/v1/chat/completions' : '/completion'}`;
  const body = chat
    ? {
        model: MODEL,
        messages: [{ role: 'user', content: prompt }],
        stream: true,
        temperature: 0,
        max_tokens: maxTokens,
        // The gateway has no llamacpp counterpart for a chat body's cache_prompt (a 400): left out there.
        ...(path === 'prefill' ? { cache_prompt: false } : {}),
      }
    : { prompt, stream: true, temperature: 0, n_predict: maxTokens, cache_prompt: false };
  const record: Run = {
    path,
    run: i,
    prompt,
    killed: '',
    identical: false,
    referenceLength: 0,
    referenceTokens: 0,
    runLength: 0,
    continuations: [],
  };
  try {
    const reference = await readStream(url, body);
    if (reference.error !== undefined || !reference.done) {
      record.skipped = `reference: ${reference.error ?? 'no end'}`;
      return record;
    }
    logs.length = 0;
    state.armed = true;
    state.calls.length = 0;
    let killing: Promise<void> | undefined;
    const run = await readStream(url, body, (count, upstream) => {
      record.firstUpstream = upstream;
      if (cut === 'client' && count === killAfter && killing === undefined) {
        const victim = servers.find((s) => s.name === upstream);
        state.killed = upstream;
        if (victim !== undefined) killing = killServer(victim);
      }
    });
    await killing;
    if (state.killed !== undefined) record.killed = state.killed;
    // The log line is written when the stream ends; give it a moment.
    for (let t = 0; t < 50 && logs.length === 0; t++) await sleep(20);
    const log = logs[logs.length - 1];
    record.continuations = log?.continuations ?? [];
    record.upstreamCalls = [...state.calls];
    if (log !== undefined) record.outcome = log.outcome;
    if (run.error !== undefined) record.error = run.error;
    record.referenceLength = reference.text.length;
    record.referenceTokens = reference.pieces.length;
    record.runLength = run.text.length;
    record.identical = reference.text === run.text && run.error === undefined;
    if (reference.text !== run.text) {
      let index = 0;
      while (index < reference.text.length && reference.text[index] === run.text[index]) index++;
      const survivor = servers.find((s) => s.name !== record.killed) ?? servers[0];
      const seam = record.continuations[0]?.afterTokens;
      const soFar = run.pieces
        .slice(0, seam ?? 0)
        .map((p) => p.text)
        .join('');
      if (survivor !== undefined)
        record.mismatch = await explain(
          survivor,
          path,
          prompt,
          reference.text,
          run.text,
          index,
          seam,
          soFar,
          maxTokens,
        ).catch((e: unknown) => ({
          index,
          reference: JSON.stringify(reference.text.slice(Math.max(0, index - 30), index + 30)),
          run: JSON.stringify(run.text.slice(Math.max(0, index - 30), index + 30)),
          cause: `could not explain: ${e instanceof Error ? e.message : String(e)}`,
        }));
    }
  } catch (e) {
    record.error = e instanceof Error ? e.message : String(e);
  } finally {
    await gateway.close();
    await served.close();
  }
  return record;
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
