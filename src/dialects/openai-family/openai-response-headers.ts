/**
 * Streaming response headers of the servers behind the OpenAI-style routes, by encoder flavor
 * (wire-formats.md §1, §3.1, §4.1, §5.1): vLLM's Starlette adds the charset; llama-server names itself
 * and (2026) disables proxy buffering; TGI's axum adds `Cache-Control` and disables buffering; Ollama
 * sends the bare content type. Flavors starting with `llamacpp` or `ollama` share their server's headers.
 */
export function openAiResponseHeaders(flavor: string | undefined): Record<string, string> {
  const name = flavor ?? 'vllm';
  if (name === 'vllm') return { 'content-type': 'text/event-stream; charset=utf-8' };
  if (name.startsWith('llamacpp'))
    return { 'content-type': 'text/event-stream', server: 'llama.cpp', 'x-accel-buffering': 'no' };
  if (name === 'tgi')
    return { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
  return { 'content-type': 'text/event-stream' };
}
