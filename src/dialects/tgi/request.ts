import { type ChatRequest, renderPrompt } from '../../events/chat-request.ts';
import { isRecord, type JsonRecord } from '../common/json-fields.ts';
import {
  dropUndefined,
  extraFields,
  formatSchema,
  optionalBoolean,
  optionalNumber,
  optionalStopList,
  requireRecord,
} from '../common/request-fields.ts';
import { RequestError } from '../dialect.ts';

const KNOWN = new Set(['inputs', 'parameters', 'stream']);
const KNOWN_PARAMETERS = new Set([
  'max_new_tokens',
  'temperature',
  'top_k',
  'top_p',
  'seed',
  'stop',
  'frequency_penalty',
  'repetition_penalty',
  'grammar',
  'top_n_tokens',
  // Read into the normalized sampling (greedy or not) and the answer's shape, which the gateway writes.
  'do_sample',
  'details',
  'decoder_input_details',
]);

/**
 * `POST /generate_stream` (or `POST /` with `stream`) body -> normalized request:
 * `{"inputs": "...", "parameters": {...}, "stream"?: bool}`. Validated as TGI's router does:
 * `max_new_tokens`, `temperature` and `top_k` strictly positive, `top_p` strictly between 0 and 1.
 * `do_sample` (with the sampling fields) says greedy or sampled: greedy is temperature 0. `details`
 * shapes the answer the gateway writes; `decoder_input_details: true` (the prompt's tokens, which no
 * other server returns) travels in `extra.parameters`. `top_n_tokens: K` (K ≥ 1) is the
 * normalized `logprobs: K`; 0 asks for nothing beyond the `logprob` every token has, so it is read as
 * not asking (the gateway does not ask another server for log probabilities a TGI client did not name).
 * `repetition_penalty` and a JSON `grammar`
 * (`{type: "json", value: schema}`) are normalized; TGI's other parameters (`return_full_text`, `truncate`,
 * a `regex` grammar…) travel in `extra.parameters`; other top-level fields in `extra`.
 */
export function tgiFromBody(input: unknown): ChatRequest {
  const body = requireRecord(input);
  const inputs = body.inputs;
  if (inputs === undefined || inputs === null)
    throw new RequestError('inputs is required', { field: 'inputs' });
  if (typeof inputs !== 'string') throw new RequestError('inputs must be a string', { field: 'inputs' });
  const request: ChatRequest = { prompt: inputs };
  request.stream = optionalBoolean(body, 'stream');
  const extra = extraFields(body, KNOWN) ?? {};
  const parameters = body.parameters;
  if (parameters !== undefined && parameters !== null) {
    if (!isRecord(parameters))
      throw new RequestError('parameters must be an object', { field: 'parameters' });
    const p = (key: string) => `parameters.${key}`;
    request.maxTokens = optionalNumber(parameters, 'max_new_tokens', {
      path: p('max_new_tokens'),
      integer: true,
      min: 1,
    });
    request.temperature = strictlyPositive(parameters, 'temperature');
    request.topK = strictlyPositive(parameters, 'top_k', true);
    const topP = optionalNumber(parameters, 'top_p', { path: p('top_p') });
    if (topP !== undefined && !(topP > 0 && topP < 1)) {
      throw new RequestError('parameters.top_p must be > 0.0 and < 1.0', { field: p('top_p') });
    }
    request.topP = topP;
    request.seed = optionalNumber(parameters, 'seed', { path: p('seed'), integer: true, min: 0 });
    request.stop = optionalStopList(parameters, 'stop', p('stop'));
    request.frequencyPenalty = optionalNumber(parameters, 'frequency_penalty', {
      path: p('frequency_penalty'),
    });
    request.repetitionPenalty = strictlyPositive(parameters, 'repetition_penalty');
    // Every token's own log probability comes whatever is asked; `top_n_tokens` adds K alternatives.
    const topN = optionalNumber(parameters, 'top_n_tokens', {
      path: p('top_n_tokens'),
      integer: true,
      min: 0,
    });
    if (topN !== undefined && topN > 0) request.logprobs = topN;
    const grammar = parameters.grammar;
    let keptGrammar: unknown;
    if (grammar !== undefined && grammar !== null) {
      if (!isRecord(grammar) || typeof grammar.type !== 'string')
        throw new RequestError('parameters.grammar must be {type, value}', { field: p('grammar') });
      if (grammar.type === 'json' && isRecord(grammar.value))
        request.responseFormat = { type: 'json_schema', schema: grammar.value };
      else keptGrammar = grammar;
    }
    for (const key of ['details', 'do_sample', 'return_full_text', 'decoder_input_details', 'watermark']) {
      optionalBoolean(parameters, key, p(key));
    }
    greedyOrSampled(parameters, request);
    let rest = extraFields(parameters, KNOWN_PARAMETERS);
    // The prompt tokens' details (non-stream only) have no counterpart on another server: asked for, they
    // travel in `extra` (a same-dialect upstream answers them; any other refuses them, naming them).
    if (parameters.decoder_input_details === true) {
      rest ??= {};
      rest.decoder_input_details = true;
    }
    // A regex grammar (or a JSON one given as text) has no normalized form: kept as it came.
    if (keptGrammar !== undefined) {
      const kept = rest ?? {};
      kept.grammar = keptGrammar;
      extra.parameters = kept;
    } else if (rest !== undefined) extra.parameters = rest;
  }
  // No parameters at all: TGI's greedy default.
  else request.temperature = 0;
  if (Object.keys(extra).length > 0) request.extra = extra;
  return dropUndefined(request);
}

/**
 * Normalized request -> TGI body (streaming). Chat turns are rendered with `renderPrompt`. Values TGI
 * would reject are translated: temperature 0 becomes greedy decoding (`do_sample: false`), and a `top_p`
 * of 1 (or ≤ 0), a `top_k` ≤ 0, a negative seed and a cap below 1 are left out. `logprobs: K` is
 * `top_n_tokens: K`, 0 included (TGI's default, which adds no `top_tokens`: every token's `logprob` comes
 * anyway, and the decoder reads it with its `logprobs` option, set by a reader that sees the parameter).
 * `details: true` is asked
 * for unless the request says otherwise: it is where the finish reason and the token counts come from.
 * `stream: true` lets the same body work on `POST /`.
 */
export function tgiToBody(request: ChatRequest): JsonRecord {
  const parameters: JsonRecord = {};
  if (request.maxTokens !== undefined && request.maxTokens >= 1)
    parameters.max_new_tokens = request.maxTokens;
  if (request.temperature !== undefined) {
    if (request.temperature > 0) parameters.temperature = request.temperature;
    else parameters.do_sample = false;
  }
  if (request.topK !== undefined && request.topK > 0) parameters.top_k = request.topK;
  if (request.topP !== undefined && request.topP > 0 && request.topP < 1) parameters.top_p = request.topP;
  if (request.seed !== undefined && request.seed >= 0) parameters.seed = request.seed;
  if (request.stop !== undefined) parameters.stop = request.stop;
  if (request.frequencyPenalty !== undefined) parameters.frequency_penalty = request.frequencyPenalty;
  if (request.repetitionPenalty !== undefined && request.repetitionPenalty > 0)
    parameters.repetition_penalty = request.repetitionPenalty;
  // 0 is TGI's default (no alternatives; every token has its logprob anyway): written all the same, so
  // that whoever reads the stream can tell the log probabilities were asked for (TgiDecoderOptions).
  if (request.logprobs !== undefined && request.logprobs >= 0) parameters.top_n_tokens = request.logprobs;
  if (request.responseFormat !== undefined && request.responseFormat.type !== 'text')
    parameters.grammar = { type: 'json', value: formatSchema(request.responseFormat) };
  const extra = request.extra ?? {};
  if (isRecord(extra.parameters)) Object.assign(parameters, extra.parameters);
  parameters.details ??= true;
  // A raw prompt (Ollama `raw: true`) goes as it is, without its system turn rendered in.
  const inputs =
    request.raw === true && request.prompt !== undefined ? request.prompt : renderPrompt(request);
  const body: JsonRecord = { inputs, parameters, stream: true };
  for (const [key, value] of Object.entries(extra)) if (!(key in body)) body[key] = value;
  return body;
}

/**
 * TGI decodes greedily unless `do_sample` is true or a sampling field changes the distribution
 * (its `NextTokenChooser`: temperature ≠ 1, top_k, top_p < 1, typical_p < 1): greedy is temperature 0 in
 * every other dialect. Sampling with no temperature given is TGI's temperature 1 (llama-server's own
 * default is 0.8, so it is said).
 */
function greedyOrSampled(parameters: JsonRecord, request: ChatRequest): void {
  const typicalP = parameters.typical_p;
  const warped =
    (request.temperature !== undefined && request.temperature !== 1) ||
    request.topK !== undefined ||
    (request.topP !== undefined && request.topP < 1) ||
    (typeof typicalP === 'number' && typicalP < 1);
  if (parameters.do_sample === true || warped) request.temperature ??= 1;
  else request.temperature = 0;
}

function strictlyPositive(parameters: JsonRecord, key: string, integer = false): number | undefined {
  const path = `parameters.${key}`;
  const value = optionalNumber(parameters, key, { path, integer });
  if (value !== undefined && value <= 0)
    throw new RequestError(`${path} must be strictly positive`, { field: path });
  return value;
}
