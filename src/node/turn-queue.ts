/**
 * Starts tasks one per event-loop turn when they come in bursts, so the I/O that is already flowing runs
 * between them. A task that arrives while none ran in this turn starts at once (a lone request waits for
 * nothing); the others of the same burst wait for later turns, one each (`setImmediate` runs after the
 * poll phase, where sockets are read). When no I/O is flowing (`serve()`: no response is streaming), a
 * task need not make room: it starts at once, behind any still waiting.
 *
 * Why: when 128 clients connect at once, setting up 128 gateway requests back to back keeps the event
 * loop busy for tens of milliseconds, and every chunk of the streams already open waits behind all of
 * them (bench/RESULTS.md: p99 chunk delay at 128 streams). Taken one per turn, the same setups cost the
 * same CPU, but a chunk waits for at most one of them. A burst with no stream to make room for gains
 * nothing by waiting: back to back, its first tokens come sooner (bench/README.md, request starts).
 */
export class TurnQueue {
  readonly #tasks: ((() => void) | undefined)[] = [];
  #head = 0;
  #busy = false;
  readonly #next = (): void => {
    if (this.#head === this.#tasks.length) {
      this.#tasks.length = 0;
      this.#head = 0;
      this.#busy = false;
      return;
    }
    const task = this.#tasks[this.#head]!;
    this.#tasks[this.#head] = undefined;
    this.#head += 1;
    setImmediate(this.#next);
    task();
  };

  /** Tasks waiting for their turn. */
  get waiting(): number {
    return this.#tasks.length - this.#head;
  }

  /** `defer`: later tasks of this turn wait for turns of their own (false: nothing needs the room). */
  run(task: () => void, defer = true): void {
    if (this.#busy) {
      this.#tasks.push(task);
      return;
    }
    if (!defer) {
      task();
      return;
    }
    this.#busy = true;
    setImmediate(this.#next);
    task();
  }
}
