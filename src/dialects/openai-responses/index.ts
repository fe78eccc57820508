import { isRecord } from '../common/json-fields.ts';
import type { DetectProbe, Dialect } from '../dialect.ts';
import { openAiErrorResponse } from '../openai-family/openai-error-response.ts';
import { OpenAiResponsesDecoder } from './decoder.ts';
import { OPENAI_RESPONSES_FLAVORS, OpenAiResponsesEncoder } from './encoder.ts';
import { responsesFromBody, responsesToBody } from './request.ts';

export type { ResponsesDecoderOptions, ResponsesFinding } from './decoder.ts';
export { OpenAiResponsesDecoder, parseResponsesUsage } from './decoder.ts';
export type { OpenAiResponsesFlavor } from './encoder.ts';

/**
 * `POST /v1/responses`: SSE with `event:` names, `response.created` first, ending with exactly one of
 * `response.completed`, `response.incomplete` or `response.failed` (wire-formats.md §14.3).
 */
export const openAiResponses: Dialect = {
  id: 'openai-responses',
  framing: 'sse',
  terminalEvent: 'response.completed, response.incomplete or response.failed',
  paths: ['/v1/responses', '/responses'],
  flavors: OPENAI_RESPONSES_FLAVORS,
  responseHeaders: (flavor) => {
    // vLLM's Starlette adds the charset; llama-server names itself and disables proxy buffering;
    // Ollama's gin writes the bare type. OpenAI's own API sends the charset too.
    const name = flavor ?? 'openai';
    if (name === 'llamacpp')
      return { 'content-type': 'text/event-stream', server: 'llama.cpp', 'x-accel-buffering': 'no' };
    if (name === 'ollama') return { 'content-type': 'text/event-stream' };
    return { 'content-type': 'text/event-stream; charset=utf-8' };
  },
  createDecoder: (options) => new OpenAiResponsesDecoder(options),
  createEncoder: (options) => new OpenAiResponsesEncoder(options),
  toRequestBody: responsesToBody,
  fromRequestBody: responsesFromBody,
  detect: (probe: DetectProbe) => {
    const payload = probe.payload;
    if (isRecord(payload) && typeof payload.type === 'string') {
      const type = payload.type;
      if (
        (type === 'response.created' || type === 'response.in_progress' || type === 'response.queued') &&
        isRecord(payload.response)
      )
        return 1;
      if (type.startsWith('response.')) return 0.9;
    }
    if (probe.path !== undefined && /\/responses\/?$/.test(probe.path)) return 0.8;
    return 0;
  },
  // OpenAI's Responses errors have the chat routes' shape: `{"error": {"message", "type", "param", "code"}}`.
  errorResponse: openAiErrorResponse,
};
