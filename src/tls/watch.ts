/**
 * TLS material that reloads itself: loaded at start (a failure stops the start), then loaded again
 * when what its files' paths resolve to changes (a symlink swapped anywhere along the path, as
 * Kubernetes does with a Secret's `..data`) or when asked (SIGHUP). A load that fails is tried once
 * more a second later (a certificate written before its key); if it fails again the old material
 * keeps serving, and the failure is logged (`tls reload failed`) and counted.
 */
import { realpathSync, statSync } from 'node:fs';
import type { Logger } from '../observability/logger.js';
import type { TlsMetrics } from '../observability/tls-metrics.js';

/** How often the resolved files are looked at (the contract: at least every 5 s). */
export const CHECK_INTERVAL = 2_000;
/** How long after a failed load it is tried again before the failure counts. */
export const RETRY_AFTER = 1_000;

export interface WatchDeps {
  readonly logger: Logger;
  readonly metrics: { get(): TlsMetrics };
}

/** Material of type `T`, kept current. */
export interface Watched<T> {
  current(): T;
  /** Loads again now (a SIGHUP, a new configuration); resolves true when the new material serves. */
  reload(): Promise<boolean>;
  /** Stops watching. */
  close(): void;
}

export interface WatchOptions<T> {
  /** The configuration key of the block, for log lines (`server.tls`). */
  readonly at: string;
  /** Reads and checks the files; throws `TlsLoadError` (or anything) when they do not load. */
  load(): T;
  /** The files `load` reads (the configuration may change them). */
  files(): readonly string[];
  /** Called with each newly loaded material (not with the first). */
  apply(material: T): void;
}

/** What a path resolves to now: its real path, inode, size and modification time. */
function fingerprint(files: readonly string[]): string {
  return files
    .map((file) => {
      try {
        const real = realpathSync(file);
        const s = statSync(real);
        return `${real}\0${s.ino}\0${s.size}\0${s.mtimeMs}`;
      } catch (err) {
        return `${file}\0${(err as NodeJS.ErrnoException).code ?? 'error'}`;
      }
    })
    .join('\n');
}

/** Loads the material at once (throws when it does not load) and watches its files. */
export function watchTls<T>(options: WatchOptions<T>, deps: WatchDeps): Watched<T> {
  let seen = fingerprint(options.files());
  let material = options.load();
  let running: Promise<boolean> | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const attempt = async (): Promise<boolean> => {
    const tries = async (): Promise<T> => {
      try {
        return options.load();
      } catch {
        await new Promise<void>((resolve) => {
          retry = setTimeout(resolve, RETRY_AFTER);
          retry.unref();
        });
        return options.load();
      }
    };
    // What is loaded is what was looked at: a change while loading is seen at the next check.
    seen = fingerprint(options.files());
    try {
      const next = await tries();
      seen = fingerprint(options.files());
      if (closed) return false;
      material = next;
      options.apply(next);
      deps.metrics.get().reloads.inc({ result: 'ok' });
      deps.logger.info({ tls: options.at }, 'tls reloaded');
      return true;
    } catch (err) {
      seen = fingerprint(options.files());
      if (closed) return false;
      deps.metrics.get().reloads.inc({ result: 'error' });
      // The message names the key and the file, never their content.
      deps.logger.error({ tls: options.at, reason: (err as Error).message }, 'tls reload failed');
      return false;
    }
  };
  const run = (): Promise<boolean> => {
    running ??= attempt().finally(() => {
      running = undefined;
    });
    return running;
  };
  const timer = setInterval(() => {
    if (running !== undefined || fingerprint(options.files()) === seen) return;
    void run();
  }, CHECK_INTERVAL);
  timer.unref();

  return {
    current: () => material,
    reload: () => (running ? running.then(run) : run()),
    close() {
      closed = true;
      clearInterval(timer);
      clearTimeout(retry);
    },
  };
}
