export type {
  ChatImage,
  ChatMessage,
  ChatRequest,
  ChatRole,
  ChatToolCall,
  ToolDefinition,
} from './chat-request.ts';
export { renderPrompt, requestMessages } from './chat-request.ts';
export type { FinishReason } from './finish-reason.ts';
export { FINISH_REASONS, unifyFinishReason } from './finish-reason.ts';
export type { Choice, IncompleteReason, Result, ResultError, StreamMetrics, ToolCall } from './result.ts';
export { emptyMetrics, mergeUsage, ResultBuilder } from './result.ts';
export type {
  ChoiceScoped,
  ErrorEvent,
  FinishEvent,
  ReasoningEvent,
  StartEvent,
  StreamEvent,
  StreamEventType,
  TextEvent,
  TimingsEvent,
  TokenLogprob,
  ToolCallDeltaEvent,
  ToolCallEvent,
  TopLogprob,
  UsageEvent,
} from './stream-event.ts';
export { completeToolCall, ToolCallAccumulator } from './tool-call-accumulator.ts';
export type { Timings, Usage } from './usage.ts';
export { msToNanos, nanosToMs } from './usage.ts';
