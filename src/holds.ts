/**
 * The requests that hold one configuration's runtime. A request runs to its end on the runtime it
 * started with (its stages, backends, pools and clients), so a runtime that a reload replaced is
 * closed only once the last request holding it has ended, or once its grace has passed.
 */
export class Holds {
  #count = 0;
  /** Set while someone waits for the count to reach zero. */
  #waiter: (() => void) | undefined;

  /** How many requests hold the runtime now. */
  get count(): number {
    return this.#count;
  }

  /** A request starts on the runtime. */
  take(): void {
    this.#count++;
  }

  /** A request that took the runtime has ended (its work and its response both over). */
  release(): void {
    if (--this.#count === 0) this.#waiter?.();
  }

  /**
   * Resolves once no request holds the runtime, once `grace` ms have passed, or once `cut()` is
   * called, whichever comes first.
   */
  released(grace: number): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.#waiter?.(), grace);
      timer.unref();
      this.#waiter = () => {
        clearTimeout(timer);
        this.#waiter = undefined;
        resolve();
      };
    });
  }

  /** Ends a wait of `released()` at once (a stop that no longer waits for requests). */
  cut(): void {
    this.#waiter?.();
  }
}
