import type { FinishEvent } from '../../events/stream-event.ts';
import type { Analysis } from './analyze-recording.ts';
import { type Finding, finding } from './finding.ts';

// How the stream ended: its bookkeeping (sequence numbers, events after the end, `completed` at the
// cap), a missing terminal event or [DONE], a cut at the output cap.

/**
 * The Responses decoder's notes on the stream's own bookkeeping: sequence numbers that skip or are
 * missing, events after the terminal one, and llama-server's `completed` at the output cap.
 */
export function bookkeepingFindings(analysis: Analysis): Finding[] {
  const out: Finding[] = [];
  const gaps = analysis.streamFindings.filter((f) => f.code === 'sequence-gap');
  if (gaps.length > 0) {
    out.push(
      finding(
        'sequence-gap',
        `${gaps.length} sequence_number gap(s); first at frame ${gaps[0]!.frame}: ${gaps[0]!.message}`,
        'an event was lost or reordered between the server and here (a proxy that drops or reorders events, a resume from the wrong cursor): the answer may miss text',
        { frames: gaps.map((f) => f.frame), messages: gaps.map((f) => f.message) },
      ),
    );
  }
  const missing = analysis.streamFindings.filter((f) => f.code === 'sequence-missing');
  if (missing.length > 0) {
    out.push(
      finding(
        'sequence-missing',
        `${missing.length} event(s) without sequence_number where the earlier ones had it; first at frame ${missing[0]!.frame}: ${missing[0]!.message}`,
        'something between the server and here writes events of its own (a gateway or proxy), or the server mixes writers: clients resuming by sequence_number will lose their place',
        { frames: missing.map((f) => f.frame) },
      ),
    );
  }
  const late = analysis.streamFindings.filter((f) => f.code === 'after-terminal');
  if (late.length > 0) {
    out.push(
      finding(
        'after-terminal',
        `${late.length} event(s) after the terminal event; first at frame ${late[0]!.frame}: ${late[0]!.message}`,
        'clients stop at the terminal event and drop these: the server (or a proxy joining two streams) writes past the end',
        { frames: late.map((f) => f.frame) },
      ),
    );
  }
  const capped = analysis.streamFindings.find((f) => f.code === 'completed-at-cap');
  if (capped !== undefined) {
    const usage = [...analysis.frames.flatMap((f) => f.events), ...analysis.endEvents].findLast(
      (event) => event.type === 'usage',
    );
    const output = usage?.type === 'usage' ? usage.usage.outputTokens : undefined;
    out.push(
      finding(
        'completed-at-cap',
        `the server says status "completed", but the output count (${output ?? '?'} tokens) reached the request's max_output_tokens (${analysis.outputCap}): the cap cut the answer, read as truncated`,
        'llama-server (b10108) writes "completed" where the spec says response.incomplete with incomplete_details.reason "max_output_tokens": clients that trust the status show a cut answer as finished; raise max_output_tokens, and check the count, not the status',
        { outputTokens: output, maxOutputTokens: analysis.outputCap, frame: capped.frame },
      ),
    );
  }
  return out;
}

export function endedEarlyFinding(analysis: Analysis): Finding {
  const end = analysis.recording.end;
  if (end.kind === 'idle-timeout') {
    return finding(
      'stalled',
      `no byte arrived for the idle timeout after ${analysis.frames.length} frame(s); inspect stopped waiting`,
      'the server stalled or a proxy holds the stream: raise --idle-timeout-ms if the model is just slow (long prefill), else check the server log',
    );
  }
  if (end.kind === 'total-timeout') {
    return finding(
      'stalled',
      `the stream was still running at --timeout-ms after ${analysis.frames.length} frame(s); inspect stopped`,
      'a long answer (lower max tokens) or a stream that never ends: check that the server sends its terminal event',
    );
  }
  const name = analysis.dialect?.id ?? 'the';
  const how =
    end.kind === 'read-error'
      ? `the connection broke${end.message ? ` (${end.message})` : ''}`
      : analysis.scan?.partialTail !== undefined
        ? 'the body ended in the middle of an event'
        : 'the body ended';
  // A Messages stream's stop_reason comes in message_delta: a cut after it still lacks message_stop.
  const stopped =
    analysis.dialect?.id === 'anthropic-messages'
      ? analysis.frames.flatMap((f) => f.events).find((event) => event.type === 'finish')
      : undefined;
  const after =
    stopped?.type === 'finish'
      ? `; the message_delta (stop_reason ${JSON.stringify(stopped.raw ?? stopped.reason)}) came, message_stop did not`
      : '';
  return finding(
    'missing-terminal-event',
    `${how} before the ${name} stream's terminal event${analysis.dialect === undefined ? '' : ` (${analysis.dialect.terminalEvent})`}${after}: the answer is incomplete`,
    ollamaCompatHint(analysis) ??
      'a crash, a proxy timeout or a dropped connection cut the stream: a client must show this answer as incomplete, not finished',
  );
}

export function completenessFinding(analysis: Analysis): Finding | undefined {
  const end = analysis.recording.end;
  if (analysis.dialect === undefined || end.kind === 'interrupted') return undefined;
  const errored = analysis.frames.some((frame) => frame.events.some((event) => event.type === 'error'));
  if (errored) return undefined;
  if (!analysis.terminalSeen) return endedEarlyFinding(analysis);
  const hasDone = analysis.dialect.id === 'openai-chat' || analysis.dialect.id === 'openai-completions';
  if (hasDone && !analysis.sentinelSeen && end.kind === 'eof') {
    const tgi = analysis.server?.server === 'TGI' ? ' (TGI chat streams have it since v2.2.0)' : '';
    return finding(
      'missing-done',
      `the stream finished but never sent data: [DONE]${tgi}`,
      'clients that wait for [DONE] (many SDKs and proxies) hang until the connection closes; a proxy may also have cut the tail',
    );
  }
  return undefined;
}

/** Ollama's OpenAI layer turns a mid-stream error into an empty chunk with `model: ""`, then closes. */
export function ollamaCompatHint(analysis: Analysis): string | undefined {
  const last = analysis.frames.at(-1);
  if (last === undefined) return undefined;
  try {
    const payload = JSON.parse(last.frame.data) as Record<string, unknown>;
    if (payload.system_fingerprint === 'fp_ollama' && payload.model === '')
      return 'Ollama\'s OpenAI layer reports a mid-stream error as an empty chunk with "model": "" and closes: the Ollama server log (or its native /api/chat) has the error';
  } catch {
    return undefined;
  }
  return undefined;
}

export function truncatedFinding(analysis: Analysis): Finding | undefined {
  let finish: FinishEvent | undefined;
  for (const frame of analysis.frames)
    for (const event of frame.events) if (event.type === 'finish') finish = event;
  if (finish?.reason !== 'length') return undefined;
  const cap = analysis.outputCap;
  const claimed = analysis.streamFindings.some((f) => f.code === 'completed-at-cap')
    ? ' (read from the output count: see completed-at-cap)'
    : '';
  const field = analysis.dialect?.id === 'openai-responses' ? 'max_output_tokens' : 'max_tokens';
  return finding(
    'truncated',
    `finish ${JSON.stringify(finish.raw ?? 'length')}${claimed}: the output cap${cap === undefined ? '' : ` (${cap} tokens)`} cut the answer off`,
    `raise ${field} (num_predict, n_predict, max_new_tokens), or the context size when the cap is the context; a client must show this answer as cut off`,
  );
}
