import type { FieldRow } from '../../src/dialects/request-field-table.ts';
import type { ChatRequest } from '../../src/events/chat-request.ts';

/**
 * Sample values for the rows of the request field table (src/dialects/request-field-table.ts), shared
 * by the table test and the translation matrix.
 */

/** A value of each normalized field that no dialect would leave out as a default. */
export const SAMPLES: Partial<Record<FieldRow['field'], unknown>> = {
  temperature: 0.5,
  topP: 0.5,
  topK: 5,
  seed: 7,
  frequencyPenalty: 0.5,
  presencePenalty: 0.5,
  maxTokens: 9,
  stop: ['zz'],
  tools: [{ name: 'f', description: 'd', parameters: { type: 'object', properties: {} } }],
  toolChoice: 'required',
  reasoning: 'high',
  reasoningBudgetTokens: 1024,
  responseFormat: { type: 'json_object' },
  repetitionPenalty: 1.2,
  minP: 0.1,
  logprobs: 2,
  n: 2,
  raw: true,
  loadOnly: true,
  images: [{ mediaType: 'image/png', data: 'iVBORw0KGgo=' }],
  developer: true,
};

/** A request asking for `sample` of the row's field (turn features go on the turns). */
export function requestWith(field: FieldRow['field'], sample: unknown): ChatRequest {
  const request: ChatRequest = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
  if (field === 'images') request.messages = [{ role: 'user', content: 'hi', images: sample as [] }];
  else if (field === 'developer')
    request.messages = [
      { role: 'system', content: 'be brief', developer: true },
      { role: 'user', content: 'hi' },
    ];
  else (request as Record<string, unknown>)[field] = sample;
  if (field === 'toolChoice') request.tools = SAMPLES.tools as ChatRequest['tools'];
  if (field === 'reasoningBudgetTokens') request.reasoning = true;
  return request;
}

/**
 * The value at a table cell's body path: `key[]` is "any element of the list at key" (the first that has
 * the rest), and a cell of several paths (`a, b`) is the first of them that holds a value.
 */
export function bodyAt(body: unknown, cell: string): unknown {
  for (const path of cell.split(', ')) {
    const value = pathAt(body, path);
    if (value !== undefined) return value;
  }
  return undefined;
}

function pathAt(body: unknown, path: string): unknown {
  const [head, ...rest] = path.split('.');
  if (head === undefined || typeof body !== 'object' || body === null) return undefined;
  if (head.endsWith('[]')) {
    const list = (body as Record<string, unknown>)[head.slice(0, -2)];
    if (!Array.isArray(list)) return undefined;
    for (const item of list) {
      const found = rest.length === 0 ? item : pathAt(item, rest.join('.'));
      if (found !== undefined) return found;
    }
    return undefined;
  }
  const value = (body as Record<string, unknown>)[head];
  return rest.length === 0 ? value : pathAt(value, rest.join('.'));
}
