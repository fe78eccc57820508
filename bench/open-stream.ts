import http from 'node:http';
import type { Route } from './gateway-routes.ts';

/** Milliseconds on the machine-wide monotonic clock (the upstream process stamps with the same). */
function monoMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** Text for longer prompts in the idle-memory measurement. */
const PROMPT_FILLER = 'The river bends past the old mill, where the water runs slow and green. ';

/** One stream as the client saw it: when it was sent, when each content frame was read. */
export interface StreamRecord {
  id: string;
  sentAt: number;
  arrivals: number[];
  error?: string | undefined;
}

export interface OpenStream {
  done: Promise<StreamRecord>;
  headers: Promise<void>;
  /** The response began (200) and has not ended. */
  isOpen(): boolean;
  destroy(): void;
}

/**
 * Sends one streaming request on `agent` and stamps each content frame's arrival on the machine-wide
 * monotonic clock; `fault` goes in `x-tokenwire-fault`, `promptBytes` lengthens the last message.
 */
export function openStream(
  base: URL,
  route: Route,
  id: string,
  maxTokens: number,
  agent: http.Agent,
  fault?: string,
  promptBytes = 0,
): OpenStream {
  const payload = route.body(id, maxTokens);
  // A longer prompt (openai-chat bodies): the last message grows by `promptBytes` of text.
  const messages = payload.messages as { content: string }[] | undefined;
  const last = messages?.at(-1);
  if (promptBytes > 0 && last !== undefined)
    last.content += ` ${PROMPT_FILLER.repeat(Math.ceil(promptBytes / PROMPT_FILLER.length)).slice(0, promptBytes)}`;
  const body = JSON.stringify(payload);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    accept: route.framing === 'sse' ? 'text/event-stream' : 'application/x-ndjson',
    'x-request-id': id,
  };
  if (fault !== undefined) headers['x-tokenwire-fault'] = fault;
  const record: StreamRecord = { id, sentAt: 0, arrivals: [] };
  const delimiter = route.framing === 'sse' ? '\n\n' : '\n';
  let onHeaders: () => void = () => {};
  const headersSeen = new Promise<void>((resolve) => {
    onHeaders = resolve;
  });
  let request: http.ClientRequest | undefined;
  let open = false;
  const done = new Promise<StreamRecord>((resolve) => {
    const fail = (message: string) => {
      open = false;
      record.error ??= message;
      onHeaders();
      resolve(record);
    };
    record.sentAt = monoMs();
    request = http.request({
      host: base.hostname,
      port: base.port,
      method: 'POST',
      path: route.path,
      headers,
      agent,
    });
    request.on('socket', (socket) => socket.setNoDelay(true));
    request.on('error', (error) => fail(error.message));
    request.on('response', (response) => {
      onHeaders();
      if (response.statusCode !== 200) {
        response.resume();
        fail(`HTTP ${response.statusCode}`);
        return;
      }
      open = true;
      response.setEncoding('utf8');
      let carry = '';
      response.on('data', (text: string) => {
        const at = monoMs();
        carry += text;
        let pos = 0;
        for (;;) {
          const end = carry.indexOf(delimiter, pos);
          if (end === -1) break;
          if (isContent(route, carry.slice(pos, end))) record.arrivals.push(at);
          pos = end + delimiter.length;
        }
        carry = carry.slice(pos);
      });
      response.on('end', () => {
        open = false;
        resolve(record);
      });
      response.on('error', (error) => fail(error.message));
      response.on('aborted', () => fail('aborted'));
    });
    request.end(body);
  });
  return { done, headers: headersSeen, isOpen: () => open, destroy: () => request?.destroy() };
}

function isContent(route: Route, block: string): boolean {
  let payload = block;
  if (route.framing === 'sse') {
    const at = block.lastIndexOf('data:');
    if (at === -1) return false;
    payload = block.slice(at + 5).trimStart();
  }
  if (!payload.startsWith('{')) return false;
  return route.content(JSON.parse(payload) as Record<string, unknown>);
}

/** An agent for the bench's streams (keep-alive, no socket limit). */
export function newAgent(): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: Number.POSITIVE_INFINITY, timeout: 4000 });
}
