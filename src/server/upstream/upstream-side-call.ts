import type { Upstream } from './upstream.ts';

/** An upstream's URL for `path` (its base may end in `/`). */
export function upstreamUrl(upstream: Upstream, path: string): string {
  return `${upstream.url.replace(/\/+$/, '')}${path}`;
}

/**
 * A request to an upstream beside generation (a side route, a token count): its answer, or undefined
 * when it could not be reached or did not answer within `timeoutMs`.
 */
export async function callUpstreamAside(
  upstream: Upstream,
  path: string,
  init: { method: string; headers: Record<string, string>; body?: string | undefined },
  timeoutMs: number,
): Promise<Response | undefined> {
  const request: RequestInit = {
    method: init.method,
    headers: init.headers,
    signal: AbortSignal.timeout(timeoutMs),
  };
  if (init.body !== undefined) request.body = init.body;
  try {
    return await (upstream.fetch ?? fetch)(new Request(upstreamUrl(upstream, path), request));
  } catch {
    return undefined;
  }
}

/** The upstream's status, content type and body; nothing else of its headers (its `server`, its CORS). */
export async function copyUpstreamAnswer(answer: Response): Promise<Response> {
  const headers: Record<string, string> = {};
  const type = answer.headers.get('content-type');
  if (type !== null) headers['content-type'] = type;
  const bytes = await answer.arrayBuffer();
  return new Response(bytes.byteLength === 0 ? null : bytes, { status: answer.status, headers });
}
