import type { DialectId } from '../dialects/dialect.ts';
import type { Result } from '../events/result.ts';
import type { SpanKind, SpanStatusCode } from './otel-types.ts';

/**
 * What the OpenTelemetry GenAI semantic conventions fix, shared by the client's and the gateway's
 * telemetry. Numeric values of the API's enums, so the API stays unloaded until telemetry is asked for.
 */
export const SPAN_KIND_SERVER: SpanKind = 1;
export const SPAN_KIND_CLIENT: SpanKind = 2;
export const STATUS_ERROR: SpanStatusCode = 2;

/** Bucket boundaries the conventions ask for, per metric (seconds, or tokens). */
export const DURATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
export const FIRST_CHUNK_BUCKETS = [
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
export const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];

/** The GenAI operation a dialect carries: chat turns, or a bare prompt. */
export function genAiOperation(dialect: DialectId | undefined): 'chat' | 'text_completion' {
  return dialect === 'openai-chat' || dialect === 'ollama-chat' ? 'chat' : 'text_completion';
}

/** `gen_ai.provider.name` for the server behind a dialect. */
export function genAiProvider(dialect: DialectId | undefined): string {
  switch (dialect) {
    case 'ollama-chat':
    case 'ollama-generate':
      return 'ollama';
    case 'llamacpp':
      return 'llama.cpp';
    case 'tgi':
      return 'hf.tgi';
    default:
      return 'openai_compatible';
  }
}

/** The conventions' finish words (OpenAI's): `tool-calls` -> `tool_calls`. */
export function genAiFinishWord(result: Result): string | undefined {
  return result.finishReason?.replace('-', '_');
}
