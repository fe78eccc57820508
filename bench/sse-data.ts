/**
 * The `data:` payloads of an SSE body, in order (`[DONE]` included), for the benches run by hand against
 * real servers: events split at blank lines, one payload per `data:` line.
 */
export async function* sseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    let end = buffer.indexOf('\n\n');
    while (end >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      end = buffer.indexOf('\n\n');
      for (const line of event.split('\n')) if (line.startsWith('data:')) yield line.slice(5).trim();
    }
  }
}
