/**
 * Per-file write serialisation for local stores. It belongs to the app instance, not to one
 * configuration: after a reload the old and the new store of one file must still take turns.
 */
import path from 'node:path';

export class FileLocks {
  readonly #queues = new Map<string, Promise<unknown>>();

  /** Runs `fn` after every task queued before it for `file`. */
  run<T>(file: string, fn: () => Promise<T>): Promise<T> {
    const key = path.resolve(file);
    const run = (this.#queues.get(key) ?? Promise.resolve()).then(fn);
    const tail = run.catch(() => undefined);
    this.#queues.set(key, tail);
    void tail.then(() => {
      if (this.#queues.get(key) === tail) this.#queues.delete(key);
    });
    return run;
  }
}
