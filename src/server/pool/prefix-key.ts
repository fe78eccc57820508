import type { ChatRequest } from '../../events/chat-request.ts';

/** The most characters of a conversation's opening that its key reads. */
const MAX_KEY_CHARS = 4096;

/**
 * What stays the same across the turns of one conversation, for prefix-affine balancing: its system
 * prompt and first user turn (every later turn's prompt starts with them, so the replica that served the
 * first turn holds them, and the turns after, in its KV cache). A bare prompt (completions, llama.cpp,
 * TGI, Ollama generate) is its own opening. At most the first 4096 characters; undefined when there is
 * nothing to key on.
 */
export function conversationKey(request: ChatRequest): string | undefined {
  const messages = request.messages;
  let key = '';
  if (messages !== undefined && messages.length > 0) {
    for (const message of messages) {
      key += `${message.role}\u0000${message.content}\u0001`;
      if (message.role === 'user' || key.length >= MAX_KEY_CHARS) break;
    }
  } else {
    key = request.prompt ?? '';
  }
  return key === '' ? undefined : key.slice(0, MAX_KEY_CHARS);
}
