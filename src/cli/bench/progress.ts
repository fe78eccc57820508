import type { LevelProgress } from '../../bench/run-level.ts';
import { formatDuration } from '../../bench/text-report.ts';
import type { Style } from '../cli-io.ts';

export interface ProgressTarget {
  write(text: string): unknown;
  isTTY?: boolean | undefined;
}

/** How far a level is, 0..1: by requests, by time, or by whichever limit is nearer. */
export function progressFraction(p: LevelProgress): number {
  let fraction = 0;
  if (p.requests !== undefined) fraction = Math.max(fraction, p.finished / p.requests);
  if (p.durationMs !== undefined) fraction = Math.max(fraction, Math.min(1, p.elapsedMs / p.durationMs));
  return Math.min(1, fraction);
}

/** `[######------]  45/100  12 in flight  3 failed  2.3 s  concurrency 8 (1/3)`, for a terminal. */
export function progressBar(p: LevelProgress, label: string, style: Style, width = 24): string {
  const fraction = progressFraction(p);
  const filled = Math.round(fraction * width);
  const bar = style.cyan('#'.repeat(filled)) + style.dim('-'.repeat(width - filled));
  const count = p.requests !== undefined ? `${p.finished}/${p.requests}` : `${p.finished} done`;
  const failed = p.notOk > 0 ? `  ${style.red(`${p.notOk} failed`)}` : '';
  return `[${bar}] ${count}  ${p.inFlight} in flight${failed}  ${formatDuration(p.elapsedMs)}  ${label}`;
}

/** A plain line for logs: `bench: concurrency 8 (1/3): 45/100 done, 12 in flight, 3 failed, 2.3 s`. */
export function progressLine(p: LevelProgress, label: string): string {
  const count = p.requests !== undefined ? `${p.finished}/${p.requests} done` : `${p.finished} done`;
  const failed = p.notOk > 0 ? `, ${p.notOk} failed` : '';
  return `bench: ${label}: ${count}, ${p.inFlight} in flight${failed}, ${formatDuration(p.elapsedMs)}`;
}

/**
 * Shows a level's progress on stderr: a bar redrawn ten times a second on a terminal, a plain line
 * every few seconds otherwise (logs, CI). Reads the engine's counters on a timer, so the streams
 * themselves pay nothing for it.
 */
export class ProgressDisplay {
  readonly #out: ProgressTarget;
  readonly #style: Style;
  readonly #tty: boolean;
  readonly #intervalMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #shown = false;

  constructor(out: ProgressTarget, style: Style, options: { lineIntervalMs?: number } = {}) {
    this.#out = out;
    this.#style = style;
    this.#tty = out.isTTY === true;
    this.#intervalMs = this.#tty ? 100 : (options.lineIntervalMs ?? 5000);
  }

  start(label: string, read: () => LevelProgress): void {
    this.stop();
    const draw = () => {
      const p = read();
      if (this.#tty) {
        this.#out.write(`\r\u001b[2K${progressBar(p, label, this.#style)}`);
        this.#shown = true;
      } else {
        this.#out.write(`${progressLine(p, label)}\n`);
      }
    };
    if (this.#tty) draw();
    this.#timer = setInterval(draw, this.#intervalMs);
    this.#timer.unref?.();
  }

  /** Stops and clears the bar (a terminal), so the results print on a clean line. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#shown) this.#out.write('\r\u001b[2K');
    this.#shown = false;
  }
}
