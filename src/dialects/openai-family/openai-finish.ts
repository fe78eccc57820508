import type { FinishEvent } from '../../events/stream-event.ts';

/** The OpenAI `finish_reason` word for a normalized finish. */
export function openAiFinishWord(finish: FinishEvent): string {
  switch (finish.reason) {
    case 'stop':
      return 'stop';
    case 'length':
      return 'length';
    case 'tool-calls':
      return 'tool_calls';
    case 'content-filter':
      return 'content_filter';
    case 'error':
      return 'abort';
    case 'other':
      return finish.raw !== null && /^[a-z_]+$/.test(finish.raw) ? finish.raw : 'stop';
  }
}
