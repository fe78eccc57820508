import { getDialect } from '../../dialects/registry.ts';
import type { ChatRequest } from '../../events/chat-request.ts';
import type { Upstream } from './upstream.ts';
import { upstreamUrl } from './upstream-side-call.ts';

/** Upstreams that answered that they have no `/apply-template` (not a llama-server): asked once. */
const WITHOUT_TEMPLATE_ROUTE = new WeakSet<Upstream>();

/**
 * Chat turns bound for a llama.cpp `/completion` upstream, rendered by that server's own chat template:
 * llama-server's `POST /apply-template` turns OpenAI-style messages into the prompt its chat route would
 * have built (`<|user|>\nhello<|end|>\n<|assistant|>\n`), so the model sees its trained format instead of
 * a generic `role: content` layout. Returns the request with that prompt in place of its messages, or the
 * request as it is when it has no messages or the upstream has no such route (then `renderPrompt`'s
 * plain layout is used, as before).
 */
export async function withServerTemplate(
  upstream: Upstream,
  request: ChatRequest,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<ChatRequest> {
  const messages = request.messages;
  // A raw prompt (Ollama `raw: true`) is the prompt as sent: no template.
  if (request.raw === true) return request;
  if (messages === undefined || messages.length === 0 || WITHOUT_TEMPLATE_ROUTE.has(upstream)) return request;
  const openAiMessages = getDialect('openai-chat').toRequestBody(request).messages;
  let answer: Response;
  try {
    answer = await (upstream.fetch ?? fetch)(
      new Request(upstreamUrl(upstream, '/apply-template'), {
        method: 'POST',
        headers: Object.assign({ 'content-type': 'application/json' }, headers),
        body: JSON.stringify({ messages: openAiMessages }),
        signal,
      }),
    );
  } catch {
    return request;
  }
  if (answer.status === 404 || answer.status === 405 || answer.status === 501) {
    WITHOUT_TEMPLATE_ROUTE.add(upstream);
    await answer.body?.cancel();
    return request;
  }
  if (!answer.ok) {
    await answer.body?.cancel();
    return request;
  }
  const value = (await answer.json().catch(() => undefined)) as { prompt?: unknown } | undefined;
  if (typeof value?.prompt !== 'string') return request;
  return Object.assign({}, request, { messages: undefined, prompt: value.prompt });
}
