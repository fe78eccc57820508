import type { DetectProbe, Dialect, ErrorResponse } from '../dialect.ts';
import { isRecord } from '../shared/json-fields.ts';
import { OpenAiChatDecoder } from './decoder.ts';
import { OPENAI_CHAT_FLAVORS, OpenAiChatEncoder, type OpenAiChatFlavor } from './encoder.ts';
import { openAiChatFromBody, openAiChatToBody } from './request.ts';

export type { OpenAiChatFlavor } from './encoder.ts';

/** `POST /v1/chat/completions`: SSE of `chat.completion.chunk`, ending with `data: [DONE]`. */
export const openAiChat: Dialect = {
  id: 'openai-chat',
  framing: 'sse',
  paths: ['/v1/chat/completions', '/chat/completions'],
  flavors: OPENAI_CHAT_FLAVORS,
  responseHeaders: (flavor) => openAiResponseHeaders(flavor),
  createDecoder: (options) => new OpenAiChatDecoder(options),
  createEncoder: (options) => new OpenAiChatEncoder(options),
  toRequestBody: openAiChatToBody,
  fromRequestBody: openAiChatFromBody,
  detect: (probe: DetectProbe) => {
    const payload = probe.payload;
    if (isRecord(payload)) {
      if (payload.object === 'chat.completion.chunk') return 1;
      const choices = payload.choices;
      if (Array.isArray(choices) && choices.some((c) => isRecord(c) && 'delta' in c)) return 0.9;
    }
    if (probe.path !== undefined && /\/chat\/completions\/?$/.test(probe.path)) return 0.8;
    return 0;
  },
  errorResponse: openAiErrorResponse,
};

/** Response headers per server: vLLM's Starlette adds the charset; TGI and llama-server disable buffering. */
export function openAiResponseHeaders(flavor: string | undefined): Record<string, string> {
  switch ((flavor ?? 'vllm') as OpenAiChatFlavor) {
    case 'vllm':
      return { 'content-type': 'text/event-stream; charset=utf-8' };
    case 'llamacpp':
    case 'llamacpp-legacy':
      return { 'content-type': 'text/event-stream', server: 'llama.cpp', 'x-accel-buffering': 'no' };
    case 'tgi':
      return { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
    default:
      return { 'content-type': 'text/event-stream' };
  }
}

/** The OpenAI error body, `{"error": {"message", "type", "param", "code"}}`, as vLLM ≥ 0.10.1 writes it. */
export function openAiErrorResponse(error: {
  status: number;
  message: string;
  errorType?: string | undefined;
}): ErrorResponse {
  const type =
    error.errorType ??
    (error.status === 401
      ? 'authentication_error'
      : error.status === 404
        ? 'not_found_error'
        : error.status === 429
          ? 'rate_limit_error'
          : error.status < 500
            ? 'invalid_request_error'
            : 'server_error');
  return {
    status: error.status,
    contentType: 'application/json',
    body: JSON.stringify({ error: { message: error.message, type, param: null, code: error.status } }),
  };
}
