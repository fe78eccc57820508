import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One step of a scripted response body. */
export type Step =
  | { write: string | Uint8Array }
  | { wait: number }
  /** Close the connection abruptly (no terminating chunk): the body is cut. */
  | { destroy: true }
  /** Keep the connection open and silent until the client leaves. */
  | { hang: true };

export interface ScriptedResponse {
  status?: number;
  headers?: Record<string, string>;
  /** Delay before the headers go out. */
  headersDelayMs?: number;
  steps: Step[];
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** When the client's connection closed before the script ended, ms after the request arrived. */
  closedEarlyAtMs?: number;
  closed: Promise<void>;
}

export interface ScriptServer {
  url: string;
  requests: RecordedRequest[];
  /** TCP connections accepted so far (keep-alive reuse shows as fewer connections than requests). */
  connections(): number;
  close(): Promise<void>;
}

/**
 * A real HTTP server on 127.0.0.1 (port 0) that answers every request with a scripted body — writes,
 * waits, a cut, or a hang — and records what the client did (including when its socket closed).
 */
export async function scriptServer(
  script: ScriptedResponse | ((request: RecordedRequest) => ScriptedResponse),
): Promise<ScriptServer> {
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer(async (req, res) => {
    const startedAt = performance.now();
    let body = '';
    for await (const chunk of req) body += chunk;
    let finished = false;
    let markClosed: () => void = () => {};
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      body,
      closed: new Promise((resolve) => {
        markClosed = resolve;
      }),
    };
    res.on('close', () => {
      if (!finished) recorded.closedEarlyAtMs = performance.now() - startedAt;
      markClosed();
    });
    requests.push(recorded);
    const plan = typeof script === 'function' ? script(recorded) : script;
    await run(plan, res);
    finished = true;
  });
  server.on('connection', (socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    connections: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

async function run(plan: ScriptedResponse, res: ServerResponse): Promise<void> {
  if (plan.headersDelayMs !== undefined) await sleep(plan.headersDelayMs);
  if (res.destroyed) return;
  res.writeHead(plan.status ?? 200, plan.headers ?? { 'content-type': 'text/event-stream' });
  res.flushHeaders();
  for (const step of plan.steps) {
    if (res.destroyed) return;
    if ('write' in step) res.write(step.write);
    else if ('wait' in step) await sleep(step.wait);
    else if ('destroy' in step) {
      res.destroy();
      return;
    } else {
      await new Promise<void>((resolve) => res.on('close', () => resolve()));
      return;
    }
  }
  res.end();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Splits wire text into one write per SSE event / NDJSON line, with `waitMs` between them. */
export function paced(text: string, waitMs: number): Step[] {
  const pieces = text.includes('\n\n') ? text.split(/(?<=\n\n)/) : text.split(/(?<=\n)/);
  const steps: Step[] = [];
  for (const piece of pieces) {
    if (piece === '') continue;
    steps.push({ write: piece });
    if (waitMs > 0) steps.push({ wait: waitMs });
  }
  return steps;
}
