/**
 * Prefix-affine balancing against real llama-server replicas (issue 31, "How it is shown"). A script
 * run by hand, not part of `npm test` or `npm run bench`: it needs a gateway fronting real servers.
 *
 * Setup (two llama-servers, each `-np 2 --metrics --slots`, behind one gateway):
 *   B=../shared/real-servers/llama-server-b10108
 *   $B/bin/llama-server -m $B/tiny.gguf --host 127.0.0.1 --port 28201 -t 1 -c 1024 -np 2 --metrics --slots
 *   $B/bin/llama-server -m $B/tiny.gguf --host 127.0.0.1 --port 28202 -t 1 -c 1024 -np 2 --metrics --slots
 *   node dist/cli/bin.js serve --port 28210 --upstream http://127.0.0.1:28201 \
 *     --upstream http://127.0.0.1:28202 --balance prefix        # then again with round-robin
 *   node .build/bench/pool-prefix-real.js --url http://127.0.0.1:28210 --label prefix
 * Restart the servers between runs (their caches start empty), or give each run its own `--seed`.
 *
 * Workload: K conversations, each with its own system prompt (`--system-words` words, a few hundred
 * tokens) and T turns; a turn sends the whole history plus a new user message to
 * `/v1/chat/completions` (stream, `temperature: 0, seed: 1`, `max_tokens` small), and the answer joins
 * the history. C conversations are in flight at once; a conversation's turns go one after another.
 *
 * Per turn it reads llama-server's `timings` (`cache_n`: prompt tokens read from the server's cache;
 * `prompt_n`: prompt tokens evaluated) from the final chunk. The request asks
 * `stream_options.include_usage`, because then llama-server puts `timings` on the usage chunk, which the
 * gateway relays; TTFT is request written → first content delta read. `x-tokenwire-upstream` says which
 * replica answered, `x-tokenwire-attempts` how many tries it took.
 *
 * Flags: `--url URL` (gateway, required), `--model NAME` (default: the first of `/v1/models`),
 * `--conversations K` (16), `--turns T` (4), `--concurrency C` (4), `--max-tokens N` (16),
 * `--system-words N` (100), `--seed S` (1; varies the text so runs share no prefix), `--label TEXT`,
 * `--json` (one JSON object on stdout instead of the summary).
 */

import { parseArgs } from 'node:util';
import { seededRandom } from '../src/bench/arrivals.ts';
import { sseData } from './sse-data.ts';
import { quantile } from './stats.ts';

interface Message {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** One turn's measurements. */
interface Turn {
  conversation: number;
  turn: number;
  upstream: string;
  attempts: string;
  ttftMs: number | undefined;
  cacheN: number | undefined;
  promptN: number | undefined;
  answer: string;
  error: string | undefined;
}

const WORDS = (
  'river stone garden window lantern harbor meadow copper violin thunder pepper marble canyon ' +
  'orchard falcon velvet compass glacier saffron timber beacon cobalt thistle quartz ember willow ' +
  'anchor prism juniper basalt cipher dune fern gravel hollow ivory jasper kelp lichen mosaic nectar ' +
  'onyx pebble quill rosin sable tundra umber vapor wren yarrow zephyr atlas bramble cedar delta'
).split(' ');

function words(next: () => number, n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(WORDS[Math.floor(next() * WORDS.length)] ?? 'word');
  return out.join(' ');
}

/** Reads one SSE stream of OpenAI chat chunks: first content delta time, answer text, `timings`. */
async function readStream(
  response: Response,
  started: number,
): Promise<{
  ttftMs: number | undefined;
  answer: string;
  cacheN?: number;
  promptN?: number;
  error?: string;
}> {
  const body = response.body;
  if (body === null) return { ttftMs: undefined, answer: '', error: 'no body' };
  let ttftMs: number | undefined;
  let answer = '';
  let cacheN: number | undefined;
  let promptN: number | undefined;
  let error: string | undefined;
  let done = false;
  for await (const data of sseData(body)) {
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    const chunk = JSON.parse(data) as {
      choices?: { delta?: { content?: string | null } }[];
      timings?: { cache_n?: number; prompt_n?: number };
      error?: { message?: string };
    };
    if (chunk.error !== undefined) error = chunk.error.message ?? JSON.stringify(chunk.error);
    const content = chunk.choices?.[0]?.delta?.content;
    if (typeof content === 'string' && content !== '') {
      if (ttftMs === undefined) ttftMs = performance.now() - started;
      answer += content;
    }
    if (chunk.timings !== undefined) {
      cacheN = chunk.timings.cache_n;
      promptN = chunk.timings.prompt_n;
    }
  }
  if (!done && error === undefined) error = 'stream ended without [DONE]';
  return {
    ttftMs,
    answer,
    ...(cacheN !== undefined ? { cacheN } : {}),
    ...(promptN !== undefined ? { promptN } : {}),
    ...(error !== undefined ? { error } : {}),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      model: { type: 'string' },
      conversations: { type: 'string', default: '16' },
      turns: { type: 'string', default: '4' },
      concurrency: { type: 'string', default: '4' },
      'max-tokens': { type: 'string', default: '16' },
      'system-words': { type: 'string', default: '100' },
      seed: { type: 'string', default: '1' },
      label: { type: 'string', default: '' },
      json: { type: 'boolean', default: false },
    },
  });
  if (values.url === undefined) throw new Error('--url URL (the gateway) is required');
  const base = values.url.replace(/\/+$/, '');
  const K = Number(values.conversations);
  const T = Number(values.turns);
  const C = Number(values.concurrency);
  const maxTokens = Number(values['max-tokens']);
  const systemWords = Number(values['system-words']);
  const seed = Number(values.seed);
  let model = values.model;
  if (model === undefined) {
    const list = (await (await fetch(`${base}/v1/models`)).json()) as { data?: { id: string }[] };
    model = list.data?.[0]?.id;
    if (model === undefined) throw new Error('the gateway lists no model; give --model');
  }

  const turns: Turn[] = [];
  const runConversation = async (k: number): Promise<void> => {
    const next = seededRandom(seed * 100_003 + k);
    const history: Message[] = [
      {
        role: 'system',
        content: `Conversation ${seed}-${k}. You are assistant number ${k}. ${words(next, systemWords)}`,
      },
    ];
    for (let t = 0; t < T; t++) {
      history.push({ role: 'user', content: `Turn ${t}: ${words(next, 8)}?` });
      const started = performance.now();
      const record: Turn = {
        conversation: k,
        turn: t,
        upstream: '',
        attempts: '',
        ttftMs: undefined,
        cacheN: undefined,
        promptN: undefined,
        answer: '',
        error: undefined,
      };
      try {
        const response = await fetch(`${base}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model,
            messages: history,
            stream: true,
            stream_options: { include_usage: true },
            temperature: 0,
            seed: 1,
            max_tokens: maxTokens,
          }),
        });
        record.upstream = response.headers.get('x-tokenwire-upstream') ?? '';
        record.attempts = response.headers.get('x-tokenwire-attempts') ?? '';
        if (!response.ok) {
          record.error = `HTTP ${response.status}: ${(await response.text()).slice(0, 200)}`;
        } else {
          const read = await readStream(response, started);
          record.ttftMs = read.ttftMs;
          record.answer = read.answer;
          record.cacheN = read.cacheN;
          record.promptN = read.promptN;
          record.error = read.error;
        }
      } catch (e) {
        record.error = e instanceof Error ? e.message : String(e);
      }
      turns.push(record);
      // The answer joins the history as the server wrote it, so the next turn's prompt extends this one.
      history.push({ role: 'assistant', content: record.answer });
      if (record.error !== undefined) process.stderr.write(`conv ${k} turn ${t}: ${record.error}\n`);
    }
  };

  let nextConversation = 0;
  const worker = async (): Promise<void> => {
    while (nextConversation < K) await runConversation(nextConversation++);
  };
  await Promise.all(Array.from({ length: Math.min(C, K) }, worker));

  const measured = turns.filter((t) => t.cacheN !== undefined && t.promptN !== undefined);
  const cacheN = measured.reduce((s, t) => s + (t.cacheN ?? 0), 0);
  const promptN = measured.reduce((s, t) => s + (t.promptN ?? 0), 0);
  const ttfts = turns.flatMap((t) => (t.ttftMs === undefined ? [] : [t.ttftMs]));
  const later = turns.filter((t) => t.turn > 0 && t.ttftMs !== undefined).map((t) => t.ttftMs ?? 0);
  const perUpstream: Record<string, number> = {};
  for (const t of turns) perUpstream[t.upstream] = (perUpstream[t.upstream] ?? 0) + 1;
  let sticky = 0;
  for (let k = 0; k < K; k++) {
    if (new Set(turns.filter((t) => t.conversation === k).map((t) => t.upstream)).size === 1) sticky++;
  }
  const summary = {
    label: values.label,
    settings: { url: base, model, conversations: K, turns: T, concurrency: C, maxTokens, systemWords, seed },
    requests: turns.length,
    errors: turns.filter((t) => t.error !== undefined).length,
    withTimings: measured.length,
    promptTokens: cacheN + promptN,
    cacheN,
    cacheShare: cacheN + promptN === 0 ? 0 : cacheN / (cacheN + promptN),
    ttftP50Ms: ttfts.length === 0 ? undefined : quantile(ttfts, 0.5),
    ttftP90Ms: ttfts.length === 0 ? undefined : quantile(ttfts, 0.9),
    laterTurnsTtftP50Ms: later.length === 0 ? undefined : quantile(later, 0.5),
    perUpstream,
    conversationsOnOneUpstream: sticky,
    retried: turns.filter((t) => t.attempts !== '' && t.attempts.includes(',')).length,
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return;
  }
  const ms = (v: number | undefined) => (v === undefined ? '-' : `${v.toFixed(1)} ms`);
  process.stdout.write(
    [
      `run ${summary.label}: ${K} conversations x ${T} turns, ${C} in flight, max_tokens ${maxTokens}, ` +
        `system ${systemWords} words, seed ${seed}`,
      `  requests ${summary.requests}, errors ${summary.errors}, with timings ${summary.withTimings}`,
      `  prompt tokens ${summary.promptTokens}, from cache (cache_n) ${cacheN} = ` +
        `${(summary.cacheShare * 100).toFixed(1)}%`,
      `  TTFT p50 ${ms(summary.ttftP50Ms)}, p90 ${ms(summary.ttftP90Ms)}; turns after the first p50 ` +
        `${ms(summary.laterTurnsTtftP50Ms)}`,
      `  per upstream ${JSON.stringify(perUpstream)}; conversations on one upstream ${sticky}/${K}`,
      '',
    ].join('\n'),
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exitCode = 1;
});
