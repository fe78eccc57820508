/** How the gateway bench reaches the upstream: straight, through the bare proxy, or through the gateway. */
export type Via = 'direct' | 'bare' | 'gateway';

/** One route of the gateway bench: where it goes, what it sends, and which payloads carry answer text. */
export interface Route {
  id: string;
  label: string;
  via: Via;
  path: string;
  framing: 'sse' | 'ndjson';
  body(id: string, maxTokens: number): Record<string, unknown>;
  /** Does this payload carry answer text? */
  content(payload: Record<string, unknown>): boolean;
}

interface OpenAiChunk {
  choices?: { delta?: { content?: unknown } }[];
}

const openAiBody = (id: string, maxTokens: number) => ({
  model: 'sim',
  messages: [{ role: 'user', content: `Tell me about rivers (${id}).` }],
  max_tokens: maxTokens,
  stream: true,
});
const openAiContent = (p: Record<string, unknown>) => {
  const content = (p as OpenAiChunk).choices?.[0]?.delta?.content;
  return typeof content === 'string' && content !== '';
};

/** The routes, `direct` first: every "added" figure is a route's minus direct's. */
export const ROUTES: readonly Route[] = [
  {
    id: 'direct',
    label: 'direct (no proxy)',
    via: 'direct',
    path: '/v1/chat/completions',
    framing: 'sse',
    body: openAiBody,
    content: openAiContent,
  },
  {
    id: 'bare',
    label: 'bare node:http proxy',
    via: 'bare',
    path: '/v1/chat/completions',
    framing: 'sse',
    body: openAiBody,
    content: openAiContent,
  },
  {
    id: 'gw-openai',
    label: 'gateway openai-chat → openai-chat',
    via: 'gateway',
    path: '/v1/chat/completions',
    framing: 'sse',
    body: openAiBody,
    content: openAiContent,
  },
  {
    id: 'gw-ollama',
    label: 'gateway ollama-chat → openai-chat',
    via: 'gateway',
    path: '/api/chat',
    framing: 'ndjson',
    body: (id, maxTokens) => ({
      model: 'sim',
      messages: [{ role: 'user', content: `Tell me about rivers (${id}).` }],
      stream: true,
      options: { num_predict: maxTokens },
    }),
    content: (p) => {
      const message = p.message as { content?: unknown } | undefined;
      return typeof message?.content === 'string' && message.content !== '';
    },
  },
  {
    id: 'gw-messages',
    label: 'gateway anthropic-messages → openai-chat',
    via: 'gateway',
    path: '/v1/messages',
    framing: 'sse',
    body: (id, maxTokens) => ({
      model: 'sim',
      max_tokens: maxTokens,
      stream: true,
      messages: [{ role: 'user', content: `Tell me about rivers (${id}).` }],
    }),
    content: (p) => {
      const delta = p.delta as { type?: unknown; text?: unknown } | undefined;
      return p.type === 'content_block_delta' && delta?.type === 'text_delta' && delta.text !== '';
    },
  },
  {
    id: 'gw-tgi',
    label: 'gateway tgi → openai-chat',
    via: 'gateway',
    path: '/generate_stream',
    framing: 'sse',
    body: (id, maxTokens) => ({
      inputs: `Tell me about rivers (${id}).`,
      parameters: { max_new_tokens: maxTokens },
    }),
    content: (p) => {
      const token = p.token as { text?: unknown; special?: unknown } | undefined;
      return (
        token !== undefined && token.special !== true && typeof token.text === 'string' && token.text !== ''
      );
    },
  },
];
