import { isRecord } from '../common/json-fields.ts';
import type { DetectProbe, Dialect, ErrorResponse } from '../dialect.ts';
import { AnthropicMessagesDecoder } from './decoder.ts';
import { ANTHROPIC_MESSAGES_FLAVORS, AnthropicMessagesEncoder, anthropicErrorType } from './encoder.ts';
import { anthropicMessagesFromBody, anthropicMessagesToBody } from './request.ts';

export type { AnthropicMessagesFlavor } from './encoder.ts';

/** `POST /v1/messages`: SSE with `event:` names, ending with `message_stop` (wire-formats.md §14.2). */
export const anthropicMessages: Dialect = {
  id: 'anthropic-messages',
  framing: 'sse',
  terminalEvent: 'a message_delta, then event: message_stop',
  paths: ['/v1/messages'],
  flavors: ANTHROPIC_MESSAGES_FLAVORS,
  responseHeaders: anthropicResponseHeaders,
  createDecoder: (options) => new AnthropicMessagesDecoder(options),
  createEncoder: (options) => new AnthropicMessagesEncoder(options),
  toRequestBody: anthropicMessagesToBody,
  fromRequestBody: anthropicMessagesFromBody,
  detect: detectAnthropicMessages,
  errorResponse: anthropicErrorResponse,
};

const STREAM_TYPES = new Set([
  'content_block_start',
  'content_block_delta',
  'content_block_stop',
  'message_delta',
]);

/** The first payload (`{"type":"message_start","message":{…}}`), else the endpoint path. */
function detectAnthropicMessages(probe: DetectProbe): number {
  const payload = probe.payload;
  if (isRecord(payload)) {
    if (payload.type === 'message_start' && isRecord(payload.message)) return 1;
    if (typeof payload.type === 'string' && STREAM_TYPES.has(payload.type)) return 0.9;
  }
  if (probe.path !== undefined && /\/v1\/messages\/?$/.test(probe.path)) return 0.8;
  return 0;
}

/**
 * Anthropic's API sends the charset and `Cache-Control`; vLLM's Starlette the charset; llama-server names
 * itself and stops buffering.
 */
export function anthropicResponseHeaders(flavor: string | undefined): Record<string, string> {
  if (flavor === 'vllm') return { 'content-type': 'text/event-stream; charset=utf-8' };
  if (flavor === 'llamacpp') {
    return { 'content-type': 'text/event-stream', server: 'llama.cpp', 'x-accel-buffering': 'no' };
  }
  return { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' };
}

/** Anthropic's error body: `{"type":"error","error":{"type","message"}}`. */
export function anthropicErrorResponse(error: {
  status: number;
  message: string;
  errorType?: string | undefined;
}): ErrorResponse {
  const type = anthropicErrorType(error);
  return {
    status: error.status,
    contentType: 'application/json',
    body: JSON.stringify({ type: 'error', error: { type, message: error.message } }),
  };
}
