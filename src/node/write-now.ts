import type { ServerResponse } from 'node:http';

/**
 * Writes text and sends it now, not after the rest of the current callback: the gateway writes once per
 * upstream read, after that read's work (server/http/response-output.ts), so there is nothing left to batch
 * with it. The response headers, when written in the same tick, still leave with the text in one write.
 * Shape kept for speed: bench/README.md "Why the code is shaped as it is" (writeNow).
 */
export function writeNow(res: ServerResponse, text: string): boolean {
  const socket = res.socket;
  // node:http corks the socket for each chunked write: that cork is released here, one taken before
  // the write (serve()'s, for the response headers) stays.
  const corked = socket === null ? 0 : socket.writableCorked;
  const ok = res.write(text);
  if (socket !== null) while (socket.writableCorked > corked) socket.uncork();
  return ok;
}
