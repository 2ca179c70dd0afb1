/**
 * The cluster primary's workers: forks them, forks again one that dies (after a back-off that grows
 * while its slot keeps failing, so that a worker unable to start does not spin), and stops them all.
 * A connection handed to a worker that dies before taking it is closed (see handoff.ts).
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from '../observability/logger.js';
import { watchHandoffs } from './handoff.js';

export interface Pool {
  /**
   * Forks the workers; resolves with the API port once every one of them listens, rejects when
   * one exits before.
   */
  start(): Promise<number>;
  /** The workers that listen: they have their signal handlers installed and answer questions. */
  listening(): Worker[];
  /** Sends `signal` to every listening worker. */
  signal(signal: NodeJS.Signals): void;
  /**
   * Stops forking, sends `signal` to every worker and waits until all have exited; those still
   * running after `deadline` ms are killed. Resolves true when every worker that had been listening
   * exited with 0.
   */
  stop(signal: NodeJS.Signals, deadline: number): Promise<boolean>;
}

export interface PoolOptions {
  /** Called each time a worker that died is replaced. */
  restarted?: () => void;
  /**
   * Test only (`GATEWAY_TEST_KILL_ON_HANDOFF`): this many times, each while every worker listens,
   * the worker just handed a connection is killed with SIGKILL, the worst moment for a worker to die.
   */
  killsOnHandoff?: number;
}

/** Back-off before forking a slot again: doubles per failure from the first, up to the max. */
const BACKOFF_FIRST = 100;
const BACKOFF_MAX = 10_000;
/** A worker that served this long before it died was healthy: its slot's back-off starts over. */
const STABLE_AFTER = 10_000;

interface State {
  readonly slot: number;
  listeningAt?: number;
  /** Killed by the test-only hook. */
  killed?: boolean;
}

/** A pool of `count` workers running this same command (see `cluster.setupPrimary`). */
export function createPool(count: number, logger: Logger, options: PoolOptions = {}): Pool {
  const { restarted = () => {} } = options;
  let kills = options.killsOnHandoff ?? 0;
  const live = new Map<Worker, State>();
  const failures = new Array<number>(count).fill(0);
  const restarts = new Set<NodeJS.Timeout>();
  let started = false;
  let stopping = false;
  let clean = true;
  let allExited = () => {};
  let onStarted!: (port: number) => void;
  let onFailed!: (err: Error) => void;
  const startedPromise = new Promise<number>((resolve, reject) => {
    onStarted = resolve;
    onFailed = reject;
  });

  const fork = (slot: number) => {
    const worker = cluster.fork();
    const state: State = { slot };
    live.set(worker, state);
    const who = () => ({ worker: worker.id, pid: worker.process.pid });
    watchHandoffs(worker, () => {
      // Never the last worker listening: node:cluster closes the port once no worker is left.
      if (kills === 0 || state.killed || listening().filter((w) => !live.get(w)?.killed).length < count)
        return;
      kills--;
      state.killed = true;
      logger.warn(who(), 'test hook: killing the worker just handed a connection');
      worker.process.kill('SIGKILL');
    });
    worker.on('error', (err) => logger.warn({ ...who(), err }, 'worker channel error'));
    worker.on('listening', ({ port }) => {
      state.listeningAt = Date.now();
      logger.info(who(), 'worker listening');
      const all = [...live.values()];
      if (!started && all.length === count && all.every((s) => s.listeningAt !== undefined)) {
        started = true;
        onStarted(port);
      }
    });
    worker.on('exit', (code, signal) => {
      live.delete(worker);
      if (stopping) {
        if (state.listeningAt !== undefined && code !== 0) clean = false;
        if (live.size === 0) allExited();
      } else if (!started) {
        onFailed(new Error(`worker ${worker.id} exited (${signal ?? code}) before listening`));
      } else {
        if (state.listeningAt !== undefined && Date.now() - state.listeningAt >= STABLE_AFTER) {
          failures[slot] = 0;
        }
        const delay = Math.min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** failures[slot]!);
        failures[slot]!++;
        logger.error({ ...who(), code, signal, restart_in_ms: delay }, 'worker exited; starting another');
        restarted();
        const timer = setTimeout(() => {
          restarts.delete(timer);
          fork(slot);
        }, delay);
        restarts.add(timer);
      }
    });
  };
  const listening = () =>
    [...live].filter(([w, s]) => s.listeningAt !== undefined && w.isConnected()).map(([w]) => w);

  return {
    start() {
      for (let slot = 0; slot < count; slot++) fork(slot);
      return startedPromise;
    },
    listening,
    signal(signal) {
      for (const worker of listening()) worker.process.kill(signal);
    },
    stop(signal, deadline) {
      stopping = true;
      for (const timer of restarts) clearTimeout(timer);
      restarts.clear();
      if (live.size === 0) return Promise.resolve(clean);
      return new Promise((resolve) => {
        const kill = setTimeout(() => {
          clean = false;
          logger.error({ workers: [...live.keys()].map((w) => w.id) }, 'workers still running; killing them');
          for (const worker of live.keys()) worker.process.kill('SIGKILL');
        }, deadline);
        allExited = () => {
          clearTimeout(kill);
          resolve(clean);
        };
        // A worker still starting has no handler yet: the signal's default action ends it, which is fine.
        for (const worker of live.keys()) worker.process.kill(signal);
      });
    },
  };
}
