import { isRecord } from '../common/json-fields.ts';
import type { DetectProbe, Dialect } from '../dialect.ts';
import { openAiErrorResponse } from '../openai-family/openai-error-response.ts';
import { openAiResponseHeaders } from '../openai-family/openai-response-headers.ts';
import { OpenAiCompletionsDecoder } from './decoder.ts';
import { OPENAI_COMPLETIONS_FLAVORS, OpenAiCompletionsEncoder } from './encoder.ts';
import { openAiCompletionsFromBody, openAiCompletionsToBody } from './request.ts';

export type { OpenAiCompletionsFlavor } from './encoder.ts';

/**
 * `POST /v1/completions`: SSE of `text_completion` chunks, ending with `data: [DONE]`. (llama-server's
 * `/completion` and `/completions` are its native dialect, not this one.)
 */
export const openAiCompletions: Dialect = {
  id: 'openai-completions',
  framing: 'sse',
  terminalEvent: 'a finish_reason, then data: [DONE]',
  paths: ['/v1/completions'],
  flavors: OPENAI_COMPLETIONS_FLAVORS,
  responseHeaders: (flavor) => openAiResponseHeaders(flavor),
  createDecoder: (options) => new OpenAiCompletionsDecoder(options),
  createEncoder: (options) => new OpenAiCompletionsEncoder(options),
  toRequestBody: openAiCompletionsToBody,
  fromRequestBody: openAiCompletionsFromBody,
  detect: (probe: DetectProbe) => {
    const payload = probe.payload;
    if (isRecord(payload)) {
      if (payload.object === 'text_completion') return 1;
      const choices = payload.choices;
      if (
        Array.isArray(choices) &&
        choices.some((c) => isRecord(c) && typeof c.text === 'string' && !('delta' in c))
      )
        return 0.9;
    }
    if (probe.path !== undefined && /\/v1\/completions\/?$/.test(probe.path)) return 0.8;
    return 0;
  },
  errorResponse: openAiErrorResponse,
};
