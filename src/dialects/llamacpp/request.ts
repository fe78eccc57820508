import { type ChatRequest, renderPrompt } from '../../events/chat-request.ts';
import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import {
  dropUndefined,
  extraFields,
  formatSchema,
  optionalBoolean,
  optionalNumber,
  optionalStopList,
  optionalString,
  requireRecord,
} from '../common/request-fields.ts';
import { RequestError } from '../dialect.ts';

const KNOWN = new Set([
  'prompt',
  'model',
  'stream',
  'n_predict',
  'max_tokens',
  'max_completion_tokens',
  'temperature',
  'top_k',
  'top_p',
  'seed',
  'stop',
  'frequency_penalty',
  'presence_penalty',
  'repeat_penalty',
  'min_p',
  'n_probs',
  'json_schema',
]);

/**
 * `POST /completion` body -> normalized request (wire-formats.md §4.10). A `prompt` that is not one
 * string (several prompts, token ids, a multimodal prompt) travels in `extra`: relayed to a llama.cpp
 * upstream, refused (400 naming `prompt`) by any other. `n_predict` (aliases
 * `max_tokens`, `max_completion_tokens`) is the output cap; a negative `n_predict` ("until end of
 * sequence or context") and a negative `seed` ("random") have no normalized meaning and travel in
 * `extra`, as do llama.cpp's own options (`cache_prompt`, `grammar`, `mirostat`…). `repeat_penalty`,
 * `min_p`, `n_probs` (top-K log probabilities; 0 asks for none) and `json_schema` are normalized.
 * `stop` should be a list (the server ignores a bare string); a bare string is accepted as one stop.
 */
export function llamacppFromBody(input: unknown): ChatRequest {
  const body = requireRecord(input);
  const prompt = body.prompt;
  if (prompt === undefined || prompt === null)
    throw new RequestError('prompt is required', { field: 'prompt' });
  const extra = extraFields(body, KNOWN) ?? {};
  let text: string;
  if (typeof prompt === 'string') text = prompt;
  else if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === 'string') text = prompt[0];
  else if (Array.isArray(prompt) || isRecord(prompt)) {
    // Several prompts (answered as interleaved streams, `index` 0, 1…), token ids, a multimodal prompt:
    // the server's own, with no normalized form. Kept for a llama.cpp upstream (which gets the body as it
    // came); `extra.prompt` makes any other refuse it, naming `prompt`.
    text = '';
    extra.prompt = prompt;
  } else {
    throw new RequestError('prompt must be a string, a list of prompts, or token ids', { field: 'prompt' });
  }
  const request: ChatRequest = { prompt: text };
  request.model = optionalString(body, 'model');
  const nPredict = optionalNumber(body, 'n_predict', { integer: true });
  if (nPredict !== undefined && nPredict < 0) extra.n_predict = nPredict;
  else request.maxTokens = nPredict;
  request.maxTokens ??=
    optionalNumber(body, 'max_tokens', { integer: true, min: 0 }) ??
    optionalNumber(body, 'max_completion_tokens', { integer: true, min: 0 });
  request.temperature = optionalNumber(body, 'temperature', { min: 0 });
  request.topK = optionalNumber(body, 'top_k', { integer: true });
  request.topP = optionalNumber(body, 'top_p', { min: 0, max: 1 });
  const seed = optionalNumber(body, 'seed', { integer: true });
  if (seed !== undefined && seed < 0) extra.seed = seed;
  else request.seed = seed;
  request.stop = optionalStopList(body, 'stop');
  request.frequencyPenalty = optionalNumber(body, 'frequency_penalty');
  request.presencePenalty = optionalNumber(body, 'presence_penalty');
  request.repetitionPenalty = optionalNumber(body, 'repeat_penalty', { min: 0 });
  request.minP = optionalNumber(body, 'min_p', { min: 0, max: 1 });
  const nProbs = optionalNumber(body, 'n_probs', { integer: true, min: 0 });
  if (nProbs !== undefined && nProbs > 0) request.logprobs = nProbs;
  const schema = body.json_schema;
  if (schema !== undefined && schema !== null) {
    if (!isRecord(schema))
      throw new RequestError('json_schema must be a JSON schema object', { field: 'json_schema' });
    request.responseFormat = { type: 'json_schema', schema };
  }
  request.stream = optionalBoolean(body, 'stream');
  if (Object.keys(extra).length > 0) request.extra = extra;
  return dropUndefined(request);
}

/**
 * Normalized request -> `POST /completion` body (streaming). Chat turns are rendered with
 * `renderPrompt` (the prompt is always raw: no template); tools and reasoning have no native field (the
 * gateway refuses them before this).
 */
export function llamacppToBody(request: ChatRequest): JsonRecord {
  // A raw prompt (Ollama `raw: true`) goes as it is, without its system turn rendered in.
  const prompt =
    request.raw === true && request.prompt !== undefined ? request.prompt : renderPrompt(request);
  const body: JsonRecord = { prompt, stream: true };
  if (request.model !== undefined) body.model = request.model;
  if (request.maxTokens !== undefined) body.n_predict = request.maxTokens;
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.topK !== undefined) body.top_k = request.topK;
  if (request.topP !== undefined) body.top_p = request.topP;
  if (request.seed !== undefined) body.seed = request.seed;
  if (request.stop !== undefined) body.stop = request.stop;
  if (request.frequencyPenalty !== undefined) body.frequency_penalty = request.frequencyPenalty;
  if (request.presencePenalty !== undefined) body.presence_penalty = request.presencePenalty;
  if (request.repetitionPenalty !== undefined) body.repeat_penalty = request.repetitionPenalty;
  if (request.minP !== undefined) body.min_p = request.minP;
  // n_probs 0 is "none": a top-0 ask (the chosen token's own probability) is refused before this.
  if (request.logprobs !== undefined && request.logprobs > 0) body.n_probs = request.logprobs;
  if (request.responseFormat !== undefined && request.responseFormat.type !== 'text') {
    body.json_schema = formatSchema(request.responseFormat);
  }
  for (const [key, value] of Object.entries(request.extra ?? {})) {
    if (key !== 'stream' && !(key in body)) body[key] = value;
  }
  return body;
}
