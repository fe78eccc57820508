export { anthropicMessages } from './anthropic-messages/index.ts';
export type {
  DecoderOptions,
  DetectProbe,
  Dialect,
  DialectDecoder,
  DialectEncoder,
  DialectErrorCode,
  DialectId,
  Emit,
  EncoderOptions,
  ErrorResponse,
  FrameSink,
  Framing,
  MidStreamError,
} from './dialect.ts';
export { DIALECT_IDS, DialectError, RequestError } from './dialect.ts';
export { frameText } from './frame-text.ts';
export { llamacpp } from './llamacpp/index.ts';
export { ollamaChat } from './ollama-chat/index.ts';
export { ollamaGenerate } from './ollama-generate/index.ts';
export { openAiChat } from './openai-chat/index.ts';
export { openAiCompletions } from './openai-completions/index.ts';
export { DIALECTS, detectDialect, dialectForPath, getDialect, isDialectId } from './registry.ts';
export type { StreamDecoderOptions } from './stream-decoder.ts';
export { StreamDecoder } from './stream-decoder.ts';
export { tgi } from './tgi/index.ts';
