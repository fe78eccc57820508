import type { Recording } from '../../capture/recording.ts';
import { runStream } from '../../client/run-stream.ts';
import type { DialectId } from '../../dialects/dialect.ts';
import { getDialect } from '../../dialects/registry.ts';
import type { Result } from '../../events/result.ts';

/**
 * What tokenwire's own client makes of a recorded exchange: the recording is played back through
 * `runStream` (a fetch that answers with the recorded head and reads, and a clock that stands at each
 * read's arrival time), so the verdict, TTFT and token figures are exactly what a live client would
 * have reported. Invalid UTF-8 is decoded as U+FFFD so a bad byte does not hide the rest. Undefined
 * when there is no 2xx response to play back. `outputCap` is the request's output cap.
 */
export async function replayRecording(
  recording: Recording,
  dialect: DialectId | undefined,
  outputCap?: number,
): Promise<Result | undefined> {
  const response = recording.response;
  if (
    recording.source === 'live' &&
    (response === undefined || response.status < 200 || response.status > 299)
  )
    return undefined;
  let clock = 0;
  let next = 0;
  const reads = recording.reads;
  const end = recording.end;
  // highWaterMark 0: a read is handed over only when the client asks, so the clock moves with it.
  const body = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const read = reads[next];
        next += 1;
        if (read === undefined) {
          if (end.atMs !== undefined) clock = end.atMs;
          if (end.kind === 'eof') controller.close();
          else controller.error(new Error(end.message ?? end.kind));
          return;
        }
        if (read.atMs !== undefined) clock = read.atMs;
        controller.enqueue(read.bytes.slice());
      },
    },
    { highWaterMark: 0 },
  );
  const url =
    recording.request?.url ??
    `http://capture.invalid${dialect === undefined ? '/' : getDialect(dialect).paths[0]}`;
  try {
    // The cap as the request had it: the client reads llama-server's Responses `completed` at it as cut.
    const sent = outputCap === undefined ? undefined : { max_output_tokens: outputCap };
    return await runStream(
      { url, dialect, body: sent },
      {
        fetch: () => {
          clock = response?.atMs ?? 0;
          return new Response(body, { status: 200, headers: response?.headers ?? {} });
        },
        now: () => clock,
        invalidUtf8: 'replace',
      },
    );
  } catch {
    return undefined;
  }
}
