import { type IncomingMessage, request } from 'node:http';

/** A request's answer from `serve --workers`: its status, the worker that answered, the body to read. */
export interface WorkerAnswer {
  status: number;
  worker: string;
  response: IncomingMessage;
}

/** One request on a connection of its own: node:cluster hands each new connection to the next worker. */
export function sendToWorker(
  url: string,
  path: string,
  init: { body?: string; headers?: Record<string, string>; giveUpMs?: number } = {},
): Promise<WorkerAnswer> {
  return new Promise<WorkerAnswer>((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method: init.body === undefined ? 'GET' : 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', ...init.headers },
      },
      (response) => {
        response.setEncoding('utf8');
        resolve({
          status: response.statusCode ?? 0,
          worker: String(response.headers['x-tokenwire-worker']),
          response,
        });
      },
    );
    req.on('error', reject);
    // A liveness bound: a connection handed to a worker as it died is never answered.
    if (init.giveUpMs !== undefined) req.setTimeout(init.giveUpMs, () => req.destroy(new Error('gave up')));
    req.end(init.body);
  });
}
