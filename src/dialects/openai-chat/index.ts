import { isRecord } from '../common/json-fields.ts';
import type { DetectProbe, Dialect } from '../dialect.ts';
import { openAiErrorResponse } from '../openai-family/openai-error-response.ts';
import { openAiResponseHeaders } from '../openai-family/openai-response-headers.ts';
import { OpenAiChatDecoder } from './decoder.ts';
import { OPENAI_CHAT_FLAVORS, OpenAiChatEncoder } from './encoder.ts';
import { openAiChatFromBody, openAiChatToBody } from './request.ts';

export type { OpenAiChatFlavor } from './encoder.ts';

/** `POST /v1/chat/completions`: SSE of `chat.completion.chunk`, ending with `data: [DONE]`. */
export const openAiChat: Dialect = {
  id: 'openai-chat',
  framing: 'sse',
  terminalEvent: 'a finish_reason, then data: [DONE]',
  paths: ['/v1/chat/completions', '/chat/completions'],
  flavors: OPENAI_CHAT_FLAVORS,
  responseHeaders: openAiResponseHeaders,
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
