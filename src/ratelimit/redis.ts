/**
 * The `redis` store: one Lua script per decision (EVALSHA, falling back to EVAL: ioredis's
 * `defineCommand`), on Redis's own clock, with a timeout per command. Every gateway and worker on one
 * Redis shares the counts. A Redis down or slow never holds a request: commands are not queued
 * while disconnected, each one is bounded by `timeout`, and an unanswered decision is reported as
 * `undefined` (the stage applies `on_error`), counted, and logged at most once a minute. The same
 * holds on Sentinel and Cluster (`redis-client.ts`): every key of one decision carries the subject's
 * hash tag, so the script's keys (all passed as KEYS) share one slot.
 */
import { hash, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Cluster } from 'ioredis';
import { LRUCache } from 'lru-cache';
import type { RedisStoreConfig } from '../config/redis-store.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { openRedisClient } from './redis-client.js';
import { DECISION_SCRIPT } from './script.js';
import type { LimitRule, RateLimitStore, Reply } from './store.js';

/** How often an unavailable store is probed (PING) to find it back. */
const PROBE_EVERY = 1_000;
/** At most one log line per this many milliseconds about the store. */
const LOG_EVERY = 60_000;
/** Subjects whose key prefix is kept (an identity deciding again skips hashing its subject). */
const TAGS_KEPT = 10_000;

interface DecisionClient {
  rateLimit(count: number, ...keysAndArgs: Array<string | number>): Promise<number[]>;
}

/** The redis store, with a way to wait for its first connection. */
export interface RedisStore extends RateLimitStore {
  /** Resolves once connected, or after `ms` whatever happened (the gateway starts either way). */
  connected(ms: number): Promise<void>;
}

/**
 * Connects to the server, the Sentinels' primary or the cluster of `config`; never throws for an
 * unreachable Redis (the store reports it).
 */
export function createRedisStore(
  config: RedisStoreConfig,
  deps: { logger: Logger; metrics: Metrics },
): RedisStore {
  const { logger } = deps;
  const duration = deps.metrics.rateLimitStoreDuration.series('');
  const client = openRedisClient(config);
  // ioredis bounds a cluster command by `timeout` only from when a node first takes it; one refused
  // before that (its node still connecting) would be retried for up to 16 redirections.
  const bounded =
    client instanceof Cluster ? (p: Promise<number[]>) => deadline(p, config.timeout) : undefined;
  client.defineCommand('rateLimit', { lua: DECISION_SCRIPT });
  const decisions = client as unknown as DecisionClient;
  /** The decision's member in a sorted set: unique across processes and decisions. */
  const instance = randomUUID();
  let sequence = 0;
  /** Each subject's keys' prefix, its hash tag: the subject only ever reaches Redis hashed. */
  const tags = new LRUCache<string, string>({ max: TAGS_KEPT });
  const tagOf = (subject: string): string => {
    let tag = tags.get(subject);
    if (tag === undefined) {
      tag = `${config.key_prefix}rl:{${hash('sha256', subject, 'base64url')}}:`;
      tags.set(subject, tag);
    }
    return tag;
  };
  let healthy = false;
  let lastLog = -Infinity;
  let suppressed = 0;

  /** Logs a failure, at most once a minute (saying how many were not logged since). */
  const report = (err: unknown) => {
    healthy = false;
    const now = performance.now();
    if (now - lastLog < LOG_EVERY) {
      suppressed++;
      return;
    }
    lastLog = now;
    // ioredis's messages name the host and port at most, never the URL's credentials.
    logger.warn({ err: (err as Error).message, suppressed, store: 'redis' }, 'rate limit store unavailable');
    suppressed = 0;
  };
  client.on('error', report);
  client.on('ready', () => {
    healthy = true;
  });
  client.on('close', () => {
    healthy = false;
  });
  const probe = setInterval(() => {
    if (healthy || client.status !== 'ready') return;
    client.ping().then(
      () => {
        healthy = true;
      },
      () => undefined,
    );
  }, PROBE_EVERY).unref();

  return {
    decide(subject: string, rules: readonly LimitRule[], record: boolean): Promise<Reply | undefined> {
      const tag = tagOf(subject);
      const args: Array<string | number> = [];
      for (const rule of rules) args.push(tag + rule.id);
      args.push(record ? 1 : 0, `${instance}:${sequence++}`);
      for (const rule of rules) args.push(rule.limit, rule.windowMs / 1000);
      const started = performance.now();
      const sent = decisions.rateLimit(rules.length, ...args);
      return (bounded ? bounded(sent) : sent).then(
        (reply) => {
          duration.observe((performance.now() - started) / 1000);
          healthy = true;
          return reply;
        },
        (err: unknown) => {
          duration.observe((performance.now() - started) / 1000);
          report(err);
          return undefined;
        },
      );
    },
    check() {
      return healthy && client.status === 'ready' ? true : 'redis unavailable';
    },
    connected(ms) {
      if (client.status === 'ready') return Promise.resolve();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          client.off('ready', done);
          resolve();
        }
        client.once('ready', done);
      });
    },
    async close() {
      clearInterval(probe);
      client.disconnect();
    },
  };
}

/** `promise`, or a rejection once `ms` have passed without its answer. */
function deadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('Command timed out')), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err as Error);
      },
    );
  });
}
