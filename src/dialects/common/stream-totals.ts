import { mergeUsage } from '../../events/result.ts';
import type { FinishEvent, TimingsEvent, UsageEvent } from '../../events/stream-event.ts';
import type { Timings, Usage } from '../../events/usage.ts';

/**
 * What every encoder holds back until `end()`: the finish, and usage and timings merged field by field
 * (a later event refines an earlier one; an undefined field never erases a known one).
 */
export class StreamTotals {
  finish: FinishEvent | undefined;
  usage: Usage | undefined;
  timings: Timings | undefined;

  keep(event: FinishEvent | UsageEvent | TimingsEvent): void {
    switch (event.type) {
      case 'finish':
        this.finish = event;
        return;
      case 'usage':
        this.usage = mergeUsage(this.usage, event.usage);
        return;
      case 'timings':
        this.timings = mergeTimings(this.timings, event.timings);
        return;
    }
  }
}

/** Later timings refine earlier ones field by field. */
export function mergeTimings(previous: Timings | undefined, next: Timings): Timings {
  const merged: Timings = { ...previous };
  for (const [key, value] of Object.entries(next) as [keyof Timings, unknown][]) {
    if (value !== undefined) (merged as Record<string, unknown>)[key] = value;
  }
  return merged;
}
