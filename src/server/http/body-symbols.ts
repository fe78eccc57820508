/**
 * The keys a server adapter (node/serve.ts) sets on a request it builds, for its body: the bytes read
 * in full, or a reader and a streamer that read them only when asked. Read by the body reader
 * (read-body.ts) and by `toRequest()` (incoming-request.ts).
 */

/** Set by a server adapter on the Request it builds: the body's bytes, already read in full. */
export const WHOLE_BODY: unique symbol = Symbol.for('tokenwire.whole-body') as never;

/**
 * Reads the body whole, refusing more than `limit` bytes: rejects with a BodyError (413 when the body
 * is or grows larger than the limit, 408 when it does not arrive in time). Set by a server adapter on
 * a request whose body it has not read yet (node/serve.ts), under READ_BODY.
 */
export type BodyReader = (limit: number) => Promise<Uint8Array>;

/** Set by a server adapter on a request whose body is read only when asked: a BodyReader. */
export const READ_BODY: unique symbol = Symbol.for('tokenwire.read-body') as never;

/**
 * The body as a stream, read as its consumer pulls (no buffering, no limit: the consumer's own), for
 * code that wants a standard Request (a user's handler behind the guard). Set beside READ_BODY.
 */
export type BodyStreamer = () => ReadableStream<Uint8Array>;

/** Set by a server adapter on a request whose body is read only when asked: a BodyStreamer. */
export const STREAM_BODY: unique symbol = Symbol.for('tokenwire.stream-body') as never;
