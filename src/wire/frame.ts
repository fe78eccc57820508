/**
 * One unit of a stream above the bytes: an SSE event (its joined `data`, `event` type and `id`) or
 * one NDJSON line (`data` only). Dialect decoders read frames, never reads.
 */
export interface Frame {
  data: string;
  /** SSE `event:` type. `error` also marks the non-standard `error: {...}` line of old llama-server. */
  event?: string | undefined;
  /** SSE `id:` of this event, when it had one. */
  id?: string | undefined;
  /** SSE `retry:` in this event, when valid. */
  retry?: number | undefined;
  /** True for a frame made from a non-standard `error:` field line (llama-server before Sep 2025). */
  legacyError?: boolean | undefined;
}
