/**
 * Fault injection: what can go wrong between a model server and its client, on demand. A spec is a
 * comma-separated list of `name` or `name=value` (`cut-after=5,stall=2000`). Numbers after `split=`
 * continue its list (`split=3,7,bytewise` splits at bytes 3 and 7). Chosen per server
 * (`SimOptions.faults`), per request (header `x-tokenwire-fault`, or a model name suffix
 * `model@<spec>`); later sources override earlier ones fault by fault.
 */
export interface Faults {
  split?: number[] | 'random';
  bytewise?: boolean;
  splitUtf8?: boolean;
  stall?: number;
  stallAfter?: number;
  cutAfter?: number;
  /** Same as `cutAfter`, named for a server-wide spec (`--sim-faults die-after=N`): the replica dies. */
  dieAfter?: number;
  errorAfter?: number;
  keepalive?: number;
  batch?: number;
  slowHeaders?: number;
  cumulative?: boolean;
  status?: number;
  tps?: number;
  ttft?: number;
  controlTokens?: string;
  ignoreStop?: boolean;
  buffer?: number;
  contentType?: string;
  noDone?: boolean;
  invalidUtf8?: boolean;
  noUsage?: boolean;
  multilingual?: boolean;
  framing?: 'sse' | 'ndjson';
}

type FaultKind =
  | 'flag'
  | 'ms'
  | 'count'
  | 'positive'
  | 'status'
  | 'split'
  | 'framing'
  | 'text'
  | 'optional-text';

/** One row of the fault table (for the README and `--help`). */
export interface FaultInfo {
  readonly name: string;
  /** The value syntax, when the fault takes one. */
  readonly value?: string;
  readonly description: string;
  readonly key: keyof Faults;
  readonly kind: FaultKind;
}

/** The default leak of the `control-tokens` fault. */
export const DEFAULT_CONTROL_TOKEN = '<|eot_id|>';

export const FAULTS: readonly FaultInfo[] = [
  {
    name: 'split',
    value: '<n,n,...>|random',
    kind: 'split',
    key: 'split',
    description: 'split every write at these byte offsets (or at 1-3 seeded random offsets)',
  },
  { name: 'bytewise', kind: 'flag', key: 'bytewise', description: 'write one byte at a time' },
  {
    name: 'split-utf8',
    kind: 'flag',
    key: 'splitUtf8',
    description: 'split writes inside every multi-byte UTF-8 character',
  },
  {
    name: 'stall',
    value: '<ms>',
    kind: 'ms',
    key: 'stall',
    description: 'pause this long once, mid-answer (or at stall-after)',
  },
  {
    name: 'stall-after',
    value: '<tokens>',
    kind: 'count',
    key: 'stallAfter',
    description: 'where the stall happens: before output token n (default: half-way)',
  },
  {
    name: 'cut-after',
    value: '<tokens>',
    kind: 'count',
    key: 'cutAfter',
    description: 'after n output tokens, break the connection: no terminal event, the body stream errors',
  },
  {
    name: 'die-after',
    value: '<tokens>',
    kind: 'count',
    key: 'dieAfter',
    description:
      'the same as cut-after, named for a server-wide spec (--sim-faults): every stream of the server is cut after n tokens',
  },
  {
    name: 'error-after',
    value: '<tokens>',
    kind: 'count',
    key: 'errorAfter',
    description: "after n output tokens, send a mid-stream error in the dialect's own shape, then end",
  },
  {
    name: 'keepalive',
    value: '<ms>',
    kind: 'positive',
    key: 'keepalive',
    description: 'SSE `:` comment after every <ms> of silence, also before the first token (NDJSON: none)',
  },
  {
    name: 'batch',
    value: '<k>',
    kind: 'positive',
    key: 'batch',
    description: 'k tokens per event, as under load',
  },
  {
    name: 'slow-headers',
    value: '<ms>',
    kind: 'ms',
    key: 'slowHeaders',
    description: 'hold the response headers this long',
  },
  {
    name: 'cumulative',
    kind: 'flag',
    key: 'cumulative',
    description: 'each text event repeats the whole text so far (a bug some servers have)',
  },
  {
    name: 'status',
    value: '<4xx|5xx>',
    kind: 'status',
    key: 'status',
    description:
      "fail before the stream with this HTTP status, in the dialect's error shape (429/503: retry-after)",
  },
  {
    name: 'tps',
    value: '<n>',
    kind: 'positive',
    key: 'tps',
    description: 'output tokens per second (a slow drip when small)',
  },
  {
    name: 'ttft',
    value: '<ms>',
    kind: 'ms',
    key: 'ttft',
    description: 'time from the request (after any model load) to the first token',
  },
  {
    name: 'control-tokens',
    value: '[<text>]',
    kind: 'optional-text',
    key: 'controlTokens',
    description: `leak a control token into the text where the answer ends (default ${DEFAULT_CONTROL_TOKEN})`,
  },
  {
    name: 'ignore-stop',
    kind: 'flag',
    key: 'ignoreStop',
    description: "don't stop at stop strings; the first stop string appears in the text",
  },
  {
    name: 'buffer',
    value: '<ms>',
    kind: 'positive',
    key: 'buffer',
    description: 'hold writes and release them in bursts at most every <ms>, like a buffering proxy',
  },
  {
    name: 'content-type',
    value: '<value>',
    kind: 'text',
    key: 'contentType',
    description: 'send this Content-Type instead (empty: none at all)',
  },
  {
    name: 'no-done',
    kind: 'flag',
    key: 'noDone',
    description: 'omit `[DONE]`; in dialects without it, omit the terminal event itself',
  },
  {
    name: 'invalid-utf8',
    kind: 'flag',
    key: 'invalidUtf8',
    description: 'inject an invalid UTF-8 byte (0xFF) inside a text value mid-answer',
  },
  { name: 'no-usage', kind: 'flag', key: 'noUsage', description: 'send no usage and no timings' },
  {
    name: 'multilingual',
    kind: 'flag',
    key: 'multilingual',
    description:
      "answer in every script at once, with emoji (default: the prompt's language): many tokens end inside a character",
  },
  {
    name: 'framing',
    value: 'ndjson|sse',
    kind: 'framing',
    key: 'framing',
    description: "frame the payloads this way whatever the dialect's own framing (headers unchanged)",
  },
];

const BY_NAME = new Map(FAULTS.map((info) => [info.name, info]));

/** Parses a fault spec; throws a TypeError naming the bad fault. The empty spec means no faults. */
export function parseFaults(spec: string): Faults {
  const faults: Record<string, unknown> = {};
  let previous: FaultInfo | undefined;
  for (const raw of spec.split(',')) {
    const part = raw.trim();
    if (part === '') continue;
    if (/^\d+$/.test(part) && previous?.kind === 'split' && Array.isArray(faults.split)) {
      (faults.split as number[]).push(Number(part));
      continue;
    }
    const eq = part.indexOf('=');
    const name = eq === -1 ? part : part.slice(0, eq).trim();
    const value = eq === -1 ? undefined : part.slice(eq + 1).trim();
    const info = BY_NAME.get(name);
    if (info === undefined) {
      throw new TypeError(
        `unknown fault ${JSON.stringify(name)} in ${JSON.stringify(spec)}; known: ${FAULTS.map((f) => f.name).join(', ')}`,
      );
    }
    faults[info.key] = parseValue(info, value);
    previous = info;
  }
  return faults as Faults;
}

/** Later fault sets override earlier ones, fault by fault. */
export function mergeFaults(...sets: readonly Faults[]): Faults {
  return Object.assign({}, ...sets) as Faults;
}

/** The canonical spec of a fault set (parses back to the same set); '' when there are none. */
export function formatFaults(faults: Faults): string {
  const parts: string[] = [];
  for (const info of FAULTS) {
    const value = faults[info.key];
    if (value === undefined || value === false) continue;
    if (info.kind === 'flag') parts.push(info.name);
    else if (Array.isArray(value)) parts.push(`${info.name}=${value.join(',')}`);
    else parts.push(`${info.name}=${String(value)}`);
  }
  return parts.join(',');
}

function parseValue(info: FaultInfo, value: string | undefined): unknown {
  const bad = (want: string): TypeError =>
    new TypeError(
      `fault ${info.name}: expected ${want}, got ${value === undefined ? 'no value' : JSON.stringify(value)}`,
    );
  switch (info.kind) {
    case 'flag':
      if (value !== undefined) throw bad('no value');
      return true;
    case 'optional-text':
      return value === undefined || value === '' ? DEFAULT_CONTROL_TOKEN : value;
    case 'text':
      if (value === undefined) throw bad('a value (may be empty)');
      return value;
    case 'framing':
      if (value !== 'sse' && value !== 'ndjson') throw bad('sse or ndjson');
      return value;
    case 'split':
      if (value === 'random') return 'random';
      if (value === undefined || !/^\d+$/.test(value) || Number(value) === 0)
        throw bad('positive byte offsets or random');
      return [Number(value)];
    case 'status': {
      const status = integer(value);
      if (status === undefined || status < 400 || status > 599) throw bad('an HTTP status from 400 to 599');
      return status;
    }
    case 'ms':
    case 'count': {
      const n = integer(value);
      if (n === undefined)
        throw bad(info.kind === 'ms' ? 'milliseconds (an integer >= 0)' : 'a token count (an integer >= 0)');
      return n;
    }
    case 'positive': {
      const n = value === undefined || value === '' ? Number.NaN : Number(value);
      if (!(Number.isFinite(n) && n > 0)) throw bad('a positive number');
      if (info.key === 'batch' && !Number.isInteger(n)) throw bad('a positive integer');
      return n;
    }
  }
}

function integer(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  return Number(value);
}
