/**
 * The timer wheel of one app instance: the requests' deadlines fire from it, instead of from a timer
 * per request.
 */

/** What the clock fires: a deadline whose time has come. */
export interface Due {
  fire(): void;
}

/** Milliseconds between the ticks of the clock: a deadline fires at most this late. */
const TICK = 50;

/**
 * The timer wheel of one app instance: deadlines whose signal exists wait in the slot of the tick
 * they fall in, and one interval timer, running only while a slot is filled, fires them.
 */
export class DeadlineClock {
  readonly #slots = new Map<number, Set<Due>>();
  #timer: NodeJS.Timeout | undefined;

  /** Fires `deadline` once its time has come. */
  add(deadline: Due, at: number): void {
    const slot = Math.ceil(at / TICK);
    let entries = this.#slots.get(slot);
    if (entries === undefined) {
      entries = new Set();
      this.#slots.set(slot, entries);
    }
    entries.add(deadline);
    this.#timer ??= setInterval(() => this.#tick(), TICK);
  }

  /** Forgets `deadline` (its request is over). */
  remove(deadline: Due, at: number): void {
    const slot = Math.ceil(at / TICK);
    const entries = this.#slots.get(slot);
    if (entries === undefined) return;
    entries.delete(deadline);
    if (entries.size === 0) this.#forget(slot);
  }

  #tick(): void {
    const now = Math.floor(performance.now() / TICK);
    for (const [slot, entries] of this.#slots) {
      if (slot > now) continue;
      this.#forget(slot);
      for (const deadline of entries) deadline.fire();
    }
  }

  #forget(slot: number): void {
    this.#slots.delete(slot);
    if (this.#slots.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}
