/**
 * The real Redis for tests: the shared one at 127.0.0.1:6379 (each test under a key prefix of its
 * own), or a private `redis-server` on a free port that a fault test may stop, pause and restart
 * (stopped by its pid, never by name). Where Redis is missing the tests are skipped with a visible
 * message, except in CI (`CI=true`), where that is a failure.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import type { Test } from 'tap';
import { Redis } from 'ioredis';
import { until } from './wait.js';

/** The shared Redis; override with `GATEWAY_TEST_REDIS_URL`. */
export const REDIS_URL = process.env.GATEWAY_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/0';

let reachable: Promise<boolean> | undefined;

async function answers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function missing(t: Test, what: string): false {
  if (process.env.CI === 'true') {
    t.fail(`${what}, and CI requires these tests to run`);
  } else {
    t.comment(`${what}: the Redis tests are skipped`);
    t.skip(what, () => undefined);
  }
  return false;
}

/** True when the shared Redis answers; otherwise a CI failure or a visible skip (the caller returns). */
export async function requireRedis(t: Test): Promise<boolean> {
  reachable ??= answers(REDIS_URL);
  if (await reachable) return true;
  return missing(t, `Redis is not reachable at ${new URL(REDIS_URL).host}`);
}

/** True when `redis-server` can be started (fault tests); otherwise as `requireRedis`. */
export function requireRedisServer(t: Test): boolean {
  const found = spawnSync('redis-server', ['--version'], { encoding: 'utf8' });
  if (found.status === 0) return true;
  return missing(t, 'redis-server is not installed');
}

/** A key prefix no other test uses. */
export function uniquePrefix(): string {
  return `gwtest:${process.pid}:${randomBytes(4).toString('hex')}:`;
}

/** A client of `url` for the test's own reads, closed when `t` ends. */
export function redisClient(t: Test, url = REDIS_URL): Redis {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  t.teardown(() => client.disconnect());
  return client;
}

/** Removes every key under `prefix` when `t` ends. */
export function cleanUp(t: Test, prefix: string): void {
  t.teardown(async () => {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    try {
      const keys = await client.keys(`${prefix}*`);
      if (keys.length > 0) await client.del(...keys);
    } finally {
      client.disconnect();
    }
  });
}

/** A private `redis-server`, stopped when the test ends. */
export interface PrivateRedis {
  readonly port: number;
  readonly url: string;
  /** The running server's process (replaced by `start`). */
  child(): ChildProcess;
  /** Starts it (again) on the same port and resolves once it answers. */
  start(): Promise<void>;
  /** Stops it (SIGKILL to its pid) and resolves once it has exited. */
  stop(): Promise<void>;
  /** SIGSTOP / SIGCONT: a Redis that holds its connections and answers nothing. */
  pause(): void;
  resume(): void;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Starts a private `redis-server` on a free port, stopped by pid when `t` ends. */
export async function privateRedis(t: Test): Promise<PrivateRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}/0`;
  let child: ChildProcess | undefined;
  const exited = (c: ChildProcess) =>
    c.exitCode !== null || c.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => c.once('exit', () => resolve()));
  const server: PrivateRedis = {
    port,
    url,
    child: () => child as ChildProcess,
    async start() {
      child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { stdio: 'ignore' },
      );
      await until(`redis-server answers on port ${port}`, () => answers(url), undefined, 25);
    },
    async stop() {
      if (child === undefined) return;
      const c = child;
      // SIGKILL ends a paused (SIGSTOP) server too.
      c.kill('SIGKILL');
      await exited(c);
    },
    pause() {
      child?.kill('SIGSTOP');
    },
    resume() {
      child?.kill('SIGCONT');
    },
  };
  t.teardown(async () => {
    if (child !== undefined && child.exitCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited(child);
    }
  });
  await server.start();
  return server;
}
