/** Where the gateway mounts the simulator's own endpoints when the simulator is its upstream. */
export const SIM_RAW_PREFIX = '/sim';

/**
 * The simulator's own bytes under a path prefix (`/sim/v1/chat/completions`, `/sim/api/chat`, …): for
 * the gateway's `fallback` when it fronts the simulator, so a page or `tokenwire inspect` can see the
 * wire-level faults (`split-utf8`, `keepalive`, `no-done`, `framing`, …) that the gateway's decode and
 * re-encode would otherwise smooth away. Undefined for any other path (the next fallback serves it).
 */
export function simRawRoute(
  handler: (request: Request) => Promise<Response>,
  prefix: string = SIM_RAW_PREFIX,
): (request: Request) => Promise<Response> | undefined {
  const base = prefix.replace(/\/+$/, '');
  return (request) => {
    const url = new URL(request.url);
    if (!url.pathname.startsWith(`${base}/`)) return undefined;
    url.pathname = url.pathname.slice(base.length);
    // A new Request on the same body and signal: the simulator sees its own path, and a client that
    // goes away still cancels the simulated stream.
    const init: RequestInit & { duplex?: 'half' } = {
      method: request.method,
      headers: request.headers,
      signal: request.signal,
    };
    if (request.body !== null) {
      init.body = request.body;
      init.duplex = 'half';
    }
    return handler(new Request(url, init));
  };
}
