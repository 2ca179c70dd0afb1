/**
 * `rate_limits.store: {type: redis, ...}` (contract §7): one server or a proxy (`url`), a primary
 * found through Sentinel (`sentinels` + `name`), or a Redis Cluster (`cluster`), with the
 * credentials and TLS that apply to each. Exactly one of `url`, `sentinels`, `cluster`.
 */
import { z } from 'zod';
import { duration, int, leaf, str } from './leaves.js';

/** A Redis node's address, as ioredis takes it. */
export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/** `host:port` (a name, an IPv4 address or a bracketed IPv6 address), or undefined. */
function parseNode(text: string): RedisNode | undefined {
  // The URL parser (a non-special scheme keeps the host as written) says what a host and a port are.
  if (!URL.canParse(`redis://${text}`)) return undefined;
  const u = new URL(`redis://${text}`);
  const bare = u.username === '' && u.password === '' && u.pathname === '' && !/[?#]/.test(text);
  if (!bare || u.hostname === '' || u.port === '' || Number(u.port) < 1) return undefined;
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(u.port) };
}

const node = () =>
  leaf(
    z.string().transform((text, ctx) => {
      const parsed = parseNode(text);
      if (parsed !== undefined) return parsed;
      ctx.addIssue({
        code: 'custom',
        message: `must be host:port (e.g. 10.0.0.5:26379 or [fd00::5]:6379), not ${JSON.stringify(text)}`,
      });
      return z.NEVER;
    }),
  );

const nodes = () => z.array(node()).min(1, 'must list at least one host:port');

/** The URL `u` when it parses (a reference left unresolved by check-config does not). */
const parsedUrl = (u: unknown): URL | undefined =>
  typeof u === 'string' && URL.canParse(u) ? new URL(u) : undefined;

export const redisStoreSchema = z
  .strictObject({
    type: z.literal('redis'),
    /** One server, or a proxy in front of several. */
    url: leaf(z.string().regex(/^rediss?:\/\/[^\s]+$/, 'must be a redis:// or rediss:// URL')).optional(),
    /** Sentinels to ask for the current primary of `name`. */
    sentinels: nodes().optional(),
    name: str(1).optional(),
    sentinel_username: str(0).optional(),
    sentinel_password: str(0).optional(),
    /** Some nodes of a Redis Cluster; the others are found from them. */
    cluster: nodes().optional(),
    username: str(1).optional(),
    password: str(0).optional(),
    db: int(0, 2_147_483_647).optional(),
    /** TLS to every node (and Sentinel), trusting `ca` besides the system's CAs when given. */
    tls: z.strictObject({ ca: str(1).optional() }).optional(),
    timeout: duration(60_000, 1).default(50),
    on_error: leaf(z.enum(['allow', 'deny'])).default('allow'),
    key_prefix: str(0).default('gateway:'),
  })
  .superRefine((c, ctx) => {
    const issue = (key: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: key === '' ? [] : [key], message });
    const given = (['url', 'sentinels', 'cluster'] as const).filter((k) => c[k] !== undefined);
    if (given.length === 0) issue('', 'needs one of url, sentinels, cluster');
    for (const key of given.slice(1)) {
      issue(key, `cannot be used with ${given[0]}: give one of url, sentinels, cluster`);
    }
    if (c.sentinels !== undefined && c.name === undefined) {
      issue('name', 'is required with sentinels (the name the Sentinels monitor the primary under)');
    }
    for (const key of ['name', 'sentinel_username', 'sentinel_password'] as const) {
      if (c[key] !== undefined && c.sentinels === undefined) issue(key, 'is only used with sentinels');
    }
    if (c.cluster !== undefined) {
      if (c.db !== undefined) issue('db', 'cannot be used with cluster (a Redis Cluster has only db 0)');
      if (typeof c.key_prefix === 'string' && /[{}]/.test(c.key_prefix)) {
        issue(
          'key_prefix',
          'must not contain { or } with cluster (the hash tag of a key is its identity hash)',
        );
      }
    }
    const url = parsedUrl(c.url);
    if (url === undefined) return;
    if (
      (c.username !== undefined || c.password !== undefined) &&
      (url.username !== '' || url.password !== '')
    ) {
      issue(
        c.password !== undefined ? 'password' : 'username',
        'cannot be used with a url that carries credentials',
      );
    }
    if (c.db !== undefined && !['', '/'].includes(url.pathname)) {
      issue('db', 'cannot be used with a url that names a db');
    }
    if (c.tls !== undefined && url.protocol === 'redis:') issue('tls', 'needs a rediss:// url');
  });

/** The validated redis store. */
export type RedisStoreConfig = z.output<typeof redisStoreSchema>;
