import { createGateway, type Gateway, type GatewayOptions } from '../create-gateway.ts';
import { abandonResponse } from '../http/abandon-response.ts';
import {
  type IncomingRequest,
  markTakesIncomingRequest,
  takesIncomingRequest,
  toRequest,
} from '../http/incoming-request.ts';
import {
  DIRECT_BODY,
  type DirectAttachment,
  type DirectBody,
  type DirectWriter,
  directBodyOf,
  directOnlyResponse,
} from '../http/response-output.ts';
import type { FetchLike } from '../upstream/upstream.ts';
import { GuardAdmission, withCors } from './guard-admission.ts';
import type { GuardOptions } from './guard-options.ts';
import { SecretRedactor, upstreamSecrets } from './secret-redactor.ts';

export type { GuardOptions, StreamSlots } from './guard-options.ts';

/** A fetch handler with the guard's live count of generation requests. */
export interface GuardedHandler {
  (request: IncomingRequest): Promise<Response>;
  /** Generation requests being served now (what `maxStreams` limits; counted only when it is set). */
  inFlight(): number;
}

/**
 * Puts a security layer in front of a gateway handler (or any fetch handler), without touching it:
 * API keys, a limit on concurrent streams, CORS with an allow-list (off by default), and redaction of
 * upstream credentials from everything sent back. Refusals use the dialect's own error shape (the
 * route's; the OpenAI shape elsewhere). Static pages (`GET` of anything but the API) and `/healthz`
 * stay open so the playground and load-balancer probes work. The checks, in their order, are
 * guard-admission.ts; what is done here to an admitted request's response (redaction, CORS headers, the
 * stream slot's release when the response is over) is `finish` below.
 */
export function guardGateway(
  handler: FetchLike | ((request: IncomingRequest) => Promise<Response>),
  options: GuardOptions = {},
): GuardedHandler {
  const admission = new GuardAdmission(options);
  const redactor = new SecretRedactor(options.secrets ?? []);
  const takesIncoming = takesIncomingRequest(handler);
  // A handler that wants a standard Request gets one (the guard itself reads only IncomingRequest's part).
  const inner = (request: IncomingRequest): Promise<Response> | Response =>
    takesIncoming
      ? (handler as (request: IncomingRequest) => Promise<Response>)(request)
      : (handler as FetchLike)(toRequest(request));
  // With no keys, no stream limit and nothing to redact, a request without an Origin header passes
  // through untouched whichever path it takes below: then none of it runs.
  // Shape kept for speed: bench/README.md "Why the code is shaped as it is" (the guard's pass-through).
  const passesWithoutOrigin = !admission.checksWithoutOrigin && !redactor.active;

  /** The request admitted (guard-admission.ts), then its response made safe to send (`finish`). */
  const guarded = async (request: IncomingRequest): Promise<Response> => {
    const misdirected = admission.hostRefusal(request);
    if (misdirected !== undefined) return misdirected;
    const origin = request.headers.get('origin');
    if (origin === null && passesWithoutOrigin) return inner(request);
    const decision = admission.admit(request, origin);
    const admitted = decision instanceof Promise ? await decision : decision;
    if (admitted instanceof Response) return admitted;
    const release = admitted.release;
    if (release === undefined) return finish(await inner(request), admitted.corsOrigin, undefined);
    let response: Response;
    try {
      response = await inner(request);
    } catch (error) {
      release();
      throw error;
    }
    try {
      return finish(response, admitted.corsOrigin, release);
    } catch (error) {
      // The response cannot go out: its slot is freed and whatever it holds (a stream, its upstream
      // call) ended with it.
      release();
      abandonResponse(response, error);
      throw error;
    }
  };

  function finish(response: Response, corsOrigin: string | undefined, release: (() => void) | undefined) {
    // A direct-only response (serve's requests): only a socket writer reads it.
    const directOnly = response.body === null ? directBodyOf(response) : undefined;
    if (directOnly !== undefined) {
      if (!redactor.active && corsOrigin === undefined && release === undefined) return response;
      return withCors(
        directOnlyResponse(guardedDirectBody(directOnly, redactor, release), {
          status: response.status,
          statusText: response.statusText,
          headers: response.headers,
        }),
        corsOrigin,
      );
    }
    if (response.body === null) {
      release?.();
      if (!redactor.active && corsOrigin === undefined) return response;
      return withCors(copy(response, null), corsOrigin);
    }
    if (!redactor.active && corsOrigin === undefined && release === undefined) return response;
    const direct = directBodyOf(response.body);
    let body = redactor.stream(response.body);
    if (release !== undefined) body = tracked(body, release);
    // Keep the adapter's direct path (node/serve.ts writes straight to the socket): the same redaction
    // and release, on the text as it is written. Whichever consumer comes first reads the body.
    if (direct !== undefined) {
      (body as unknown as Record<symbol, unknown>)[DIRECT_BODY] = guardedDirectBody(
        direct,
        redactor,
        release,
      );
    }
    return withCors(copy(response, body), corsOrigin);
  }

  // The guard reads only what an IncomingRequest has: it takes one whatever it guards, so a server
  // adapter leaves the body unread until a request is admitted (a handler that wants a standard Request
  // gets one then, its body streamed: toRequest).
  markTakesIncomingRequest(guarded);
  return Object.assign(guarded, { inFlight: () => admission.inFlight });
}

export interface GuardedGateway {
  gateway: Gateway;
  /** The gateway's handler behind the guard: what to serve. */
  fetch: GuardedHandler;
  /** Redacts the upstream credentials (and `secrets`) from any text, e.g. a log line. */
  redactor: SecretRedactor;
}

/**
 * A gateway with its guard, wired so upstream credentials (every upstream header value long enough to
 * be one, plus `secrets`) never reach a client, a log record (`onLog` gets redacted records) or
 * `/metrics`. What `tokenwire serve` runs.
 */
export function createGuardedGateway(options: GatewayOptions & GuardOptions): GuardedGateway {
  const secrets = [...upstreamSecrets(options.upstreams), ...(options.secrets ?? [])];
  const redactor = new SecretRedactor(secrets);
  const onLog = options.onLog;
  const gateway = createGateway({
    ...options,
    onLog: onLog === undefined ? undefined : (record) => onLog(redactor.value(record)),
  });
  const fetch = guardGateway(gateway.fetch, {
    apiKeys: options.apiKeys,
    maxStreams: options.maxStreams,
    streamSlots: options.streamSlots,
    retryAfterSeconds: options.retryAfterSeconds,
    corsOrigins: options.corsOrigins,
    allowedHosts: options.allowedHosts,
    secrets,
    metrics: gateway.metrics,
  });
  return { gateway, fetch, redactor };
}

/** A direct body that redacts what is written and calls `release` once when the response is over. */
function guardedDirectBody(
  direct: DirectBody,
  redactor: SecretRedactor,
  release: (() => void) | undefined,
): DirectBody {
  return {
    attach(writer: DirectWriter): DirectAttachment {
      let over = false;
      const done = () => {
        if (over) return;
        over = true;
        release?.();
      };
      const redacting = redactor.active ? redactor.textStream() : undefined;
      const guarded: DirectWriter = {
        write: (text) => writer.write(redacting === undefined ? text : redacting.push(text)),
        end: (text) => {
          if (redacting === undefined) writer.end(text);
          else {
            const written = text === undefined || text === '' ? '' : redacting.push(text);
            writer.end(written + redacting.end());
          }
          done();
        },
        destroy: () => {
          writer.destroy();
          done();
        },
      };
      const attachment = direct.attach(guarded);
      return {
        drained: () => attachment.drained(),
        closed: () => {
          attachment.closed();
          done();
        },
      };
    },
  };
}

function copy(response: Response, body: ReadableStream<Uint8Array> | null): Response {
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: new Headers(response.headers),
  });
}

/** The same bytes, calling `onEnd` once when the body finishes, fails or is cancelled. */
function tracked(body: ReadableStream<Uint8Array>, onEnd: () => void): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await reader.read();
          if (next.done) {
            onEnd();
            controller.close();
          } else {
            controller.enqueue(next.value);
          }
        } catch (error) {
          onEnd();
          controller.error(error);
        }
      },
      cancel(reason) {
        onEnd();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
