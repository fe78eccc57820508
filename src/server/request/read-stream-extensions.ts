import { RequestError } from '../../dialects/dialect.ts';
import type { FlushPolicy } from '../relay/coalescer.ts';

/**
 * tokenwire's own `stream_options` fields, accepted on every route (they are not standard: the seeds'
 * `include_prompt`/`chunk_size`/`delimiter` are not fields any real server reads):
 *
 * - `include_prompt` (boolean): write the prompt as the stream's first content, in the route's own
 *   shape (see the gateway docs for the choice per dialect).
 * - `tokenwire_flush_interval_ms` (integer 1-60000), `tokenwire_flush_bytes` (integer 1-1048576),
 *   `tokenwire_flush_delimiter` (string of 1-64 characters): coalesce text for this request instead
 *   of the gateway's default flush policy (any of them replaces the whole default policy).
 *
 * They are removed from the body before it is mapped, so an upstream never sees them. Every other
 * `stream_options` field (vLLM's `continuous_usage_stats`…) stays, and reaches a same-dialect upstream
 * unchanged.
 */
export interface StreamExtensions {
  /** The body without the tokenwire fields. */
  body: unknown;
  includePrompt: boolean;
  /** Set when the request chose its own flush policy. */
  flush: FlushPolicy | undefined;
}

export const STREAM_EXTENSION_FIELDS = [
  'include_prompt',
  'tokenwire_flush_interval_ms',
  'tokenwire_flush_bytes',
  'tokenwire_flush_delimiter',
] as const;

const MAX_INTERVAL_MS = 60000;
const MAX_FLUSH_BYTES = 1024 * 1024;
const MAX_DELIMITER = 64;

/** Takes the tokenwire extensions out of `body.stream_options`, validating each (a 400 names the field). */
export function readStreamExtensions(body: unknown): StreamExtensions {
  const none: StreamExtensions = { body, includePrompt: false, flush: undefined };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return none;
  const record = body as Record<string, unknown>;
  const options = record.stream_options;
  if (options === undefined || options === null) return none;
  if (typeof options !== 'object' || Array.isArray(options))
    throw new RequestError('stream_options must be an object', { field: 'stream_options' });
  const given = options as Record<string, unknown>;
  const usage = given.include_usage;
  if (usage !== undefined && usage !== null && typeof usage !== 'boolean') {
    throw new RequestError('stream_options.include_usage must be true or false', {
      field: 'stream_options.include_usage',
    });
  }
  if (!STREAM_EXTENSION_FIELDS.some((name) => given[name] !== undefined)) return none;

  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(given))
    if (!(STREAM_EXTENSION_FIELDS as readonly string[]).includes(key)) rest[key] = value;

  let includePrompt = false;
  if (given.include_prompt !== undefined && given.include_prompt !== null) {
    if (typeof given.include_prompt !== 'boolean') {
      throw new RequestError('stream_options.include_prompt must be true or false', {
        field: 'stream_options.include_prompt',
      });
    }
    includePrompt = given.include_prompt;
  }
  const flush: FlushPolicy = {};
  const interval = integerField(given, 'tokenwire_flush_interval_ms', MAX_INTERVAL_MS);
  if (interval !== undefined) flush.intervalMs = interval;
  const bytes = integerField(given, 'tokenwire_flush_bytes', MAX_FLUSH_BYTES);
  if (bytes !== undefined) flush.bytes = bytes;
  const delimiter = given.tokenwire_flush_delimiter;
  if (delimiter !== undefined && delimiter !== null) {
    if (typeof delimiter !== 'string' || delimiter.length === 0 || delimiter.length > MAX_DELIMITER) {
      throw new RequestError(
        `stream_options.tokenwire_flush_delimiter must be a string of 1 to ${MAX_DELIMITER} characters`,
        { field: 'stream_options.tokenwire_flush_delimiter' },
      );
    }
    flush.delimiter = delimiter;
  }

  const cleaned: Record<string, unknown> = { ...record };
  // An object left empty is dropped: to vLLM, a present `stream_options` changes the usage default.
  if (Object.keys(rest).length > 0) cleaned.stream_options = rest;
  else delete cleaned.stream_options;
  const chosen = Object.keys(flush).length > 0 ? flush : undefined;
  return { body: cleaned, includePrompt, flush: chosen };
}

function integerField(options: Record<string, unknown>, name: string, max: number): number | undefined {
  const value = options[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new RequestError(`stream_options.${name} must be a whole number from 1 to ${max}`, {
      field: `stream_options.${name}`,
    });
  }
  return value;
}
