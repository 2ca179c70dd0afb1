/** A target set over real replicas for the upstream unit tests, closed with the test. */
import type { Test } from 'tap';
import type { Pool } from 'undici';
import { httpProbe } from '../../src/upstream/health.js';
import { type TargetEvents, TargetSet, type TargetSettings } from '../../src/upstream/targets.js';
import { type Got, openPool, poolTransport, type Replica, type Sent } from './targets.js';
import { sendToTargets, type Sending } from '../../src/upstream/attempts.js';

export const DEFAULTS: TargetSettings = {
  balance: 'least_request',
  outlier: { consecutiveFailures: 5, baseEjection: 30_000, maxEjected: 0.5 },
  retries: { attempts: 1, budget: 0.2 },
};

/** A clock a test moves by hand. */
export function manualClock() {
  let now = 0;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

/** The target set of `replicas` with `settings`, closed (with its pools) when `t` ends. */
export function targetSet(
  t: Test,
  replicas: readonly Replica[],
  settings: Partial<TargetSettings> = {},
  options: {
    clock?: () => number;
    random?: () => number;
    events?: TargetEvents<Pool>;
    open?: (url: URL) => Pool;
  } = {},
): TargetSet<Pool> {
  const set = new TargetSet(
    replicas.map((r) => r.url),
    { ...DEFAULTS, ...settings },
    { open: openPool, probe: (url, path) => httpProbe(url, path, { timeout: 2000 }), ...options },
  );
  t.teardown(async () => {
    await set.close();
    await Promise.all(set.targets.map((target) => target.transport.destroy()));
  });
  return set;
}

/** Sends `sent` through `set` as `sendToTargets` does; resolves with the answer and who gave it. */
export async function send(
  set: TargetSet<Pool>,
  sent: Sent,
  options: { replayable?: boolean; deadlineAt?: number; retried?: (reason: string) => void } = {},
): Promise<Got & { from: string }> {
  const request: Sending = {
    method: sent.method,
    replayable: options.replayable ?? true,
    signal: sent.signal ?? { aborted: false },
    ...(options.deadlineAt === undefined ? {} : { deadlineAt: options.deadlineAt }),
  };
  const { answer, target } = await sendToTargets(set, request, poolTransport(sent, options.retried));
  return { ...answer, from: target.url.origin };
}

/** `GET /x`. */
export const GET: Sent = { method: 'GET', path: '/x' };
