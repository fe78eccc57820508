import { CumulativeTextFilter } from '../../client/cumulative-text.ts';
import type { Analysis } from './analyze-recording.ts';
import { findControlTokens } from './find-control-tokens.ts';
import { type Finding, finding } from './finding.ts';

// What the answer's text and counts say: control tokens, an ignored stop string, missing usage,
// cumulative text.

export function controlTokensFinding(text: string): Finding | undefined {
  const hits = findControlTokens(text);
  if (hits.length === 0) return undefined;
  const list = hits.map((hit) => `${hit.token} ×${hit.count}`).join(', ');
  const first = hits[0]!;
  const context = text.slice(Math.max(0, first.firstAt - 30), first.firstAt + first.token.length + 10);
  return finding(
    'control-tokens',
    `the text contains control tokens: ${list} (e.g. …${JSON.stringify(context).slice(1, -1)}…)`,
    "the server decodes special tokens as text or its chat template's end token is wrong: keep skip_special_tokens on (vLLM), fix the template / GGUF metadata (llama.cpp, Ollama), or add the token to the stop list",
    { tokens: hits },
  );
}

export function ignoredStopFinding(analysis: Analysis): Finding | undefined {
  const stops = (analysis.request?.stop ?? []).filter((stop) => stop !== '');
  if (stops.length === 0) return undefined;
  const text = analysis.text;
  const keepsStop = analysis.requestBody?.include_stop_str_in_output === true;
  const found = stops.filter((stop) => {
    const at = text.indexOf(stop);
    if (at === -1) return false;
    // vLLM's include_stop_str_in_output keeps the stop string at the very end, legitimately.
    return !(keepsStop && at + stop.length === text.length);
  });
  if (found.length === 0) return undefined;
  return finding(
    'ignored-stop',
    `the text contains the stop string(s) ${found.map((s) => JSON.stringify(s)).join(', ')} from the request: the server did not stop there`,
    'check the parameter name this server reads (stop, options.stop, parameters.stop), and that stop strings work while streaming on this server and version',
    { stops: found },
  );
}

export function usageFinding(analysis: Analysis): Finding | undefined {
  const dialect = analysis.dialect;
  // Usage comes last: a stream cut short or failed says nothing about it.
  if (dialect === undefined || !analysis.complete) return undefined;
  const all = [...analysis.frames.flatMap((f) => f.events), ...analysis.endEvents];
  if (all.some((event) => event.type === 'usage' && event.usage.outputTokens !== undefined)) return undefined;
  const body = analysis.requestBody;
  const known = body !== undefined;
  switch (dialect.id) {
    case 'openai-chat':
    case 'openai-completions': {
      const options = body?.stream_options;
      const asked =
        typeof options === 'object' &&
        options !== null &&
        (options as Record<string, unknown>).include_usage === true;
      if (asked) {
        return finding(
          'usage-absent',
          'the request asked for usage (stream_options.include_usage) but no usage chunk came',
          'the server or a gateway in between ignores stream_options (Ollama before v0.5.2, some proxies); token counts will be estimates',
        );
      }
      return finding(
        'usage-not-requested',
        `no token usage in the stream${known ? ' (the request did not ask for it)' : ''}`,
        'add "stream_options": {"include_usage": true} to the request to get the token counts in a final chunk',
      );
    }
    case 'tgi': {
      const parameters = body?.parameters;
      const asked =
        typeof parameters === 'object' &&
        parameters !== null &&
        (parameters as Record<string, unknown>).details === true;
      if (!asked) {
        return finding(
          'usage-not-requested',
          `no token counts in the stream${known ? ' (the request did not ask for details)' : ''}`,
          'add "parameters": {"details": true} to get generated_tokens and the finish reason on the last event',
        );
      }
      return finding(
        'usage-absent',
        'the request asked for details but the last event carries no generated_tokens',
        'the server or a proxy dropped the details object; token counts will be estimates',
      );
    }
    default:
      return finding(
        'usage-absent',
        `no token counts in the stream, which ${dialect.id} always sends on its last event`,
        'a proxy or gateway may have rewritten the final event; token counts will be estimates',
      );
  }
}

export function cumulativeFinding(pieces: readonly string[]): Finding | undefined {
  if (pieces.length < 3) return undefined;
  const filter = new CumulativeTextFilter();
  for (const piece of pieces) filter.next(piece);
  if (!filter.detected) return undefined;
  return finding(
    'cumulative-text',
    `the text events repeat the whole answer so far instead of sending only the new part (${pieces.length} events)`,
    "naive clients print the answer over and over: the server should send deltas (tokenwire's client detects this and keeps only the new text)",
  );
}
