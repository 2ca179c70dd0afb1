/**
 * Real Redis topologies for tests, each started by the test with the machine's `redis-server` on
 * private ports and stopped by pid when the test ends: a primary with a replica watched by three
 * Sentinels, and a three-node Redis Cluster. Never the shared Redis at 127.0.0.1:6379.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { Redis } from 'ioredis';
import { freePort } from './redis.js';
import { until } from './wait.js';

/** `until`, for checks that may throw while a server is starting (a refused connection is "not yet"). */
export async function waitFor(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms: number,
  every = 50,
): Promise<void> {
  await until(
    what,
    () =>
      Promise.resolve()
        .then(check)
        .catch(() => false),
    ms,
    every,
  );
}

/** A `redis-server` process of the test. */
export interface RedisProcess {
  readonly port: number;
  readonly address: string;
  /** A client of it for the test's own reads (closed when the test ends). */
  readonly client: Redis;
  /** SIGKILL to its pid; resolves once it has exited. */
  kill(): Promise<void>;
  /** SIGSTOP: a server that keeps its connections open and answers nothing (killed at teardown). */
  freeze(): void;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** A folder for the servers' files, removed when `t` ends. */
export function serverDir(t: Test): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'gateway-redis-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A server's certificate, the one it presents to its peers (the cluster bus asks for it), and the
 * CA that clients and peers trust.
 */
export interface ServerTls {
  readonly cert: string;
  readonly key: string;
  readonly clientCert: string;
  readonly clientKey: string;
  readonly ca: string;
}

/**
 * The settings that make a server (or Sentinel) listen on `port`, over TLS only with `tls`, and
 * speak TLS to its peers (replication, cluster bus, other Sentinels); clients need no certificate.
 */
function listening(port: number, tls: ServerTls | undefined): Array<[string, string]> {
  if (tls === undefined) return [['port', String(port)]];
  return [
    ['port', '0'],
    ['tls-port', String(port)],
    ['tls-cert-file', tls.cert],
    ['tls-key-file', tls.key],
    ['tls-client-cert-file', tls.clientCert],
    ['tls-client-key-file', tls.clientKey],
    ['tls-ca-cert-file', tls.ca],
    ['tls-auth-clients', 'no'],
    ['tls-replication', 'yes'],
    ['tls-cluster', 'yes'],
  ];
}

/**
 * Starts `redis-server ...args` (a Sentinel with the `conf` lines, written to `dir`) on a free port
 * and resolves once it answers PING (with `password`, over TLS with `tls`).
 */
export async function startServer(
  t: Test,
  dir: string,
  options: { args?: string[]; conf?: string[]; password?: string; tls?: ServerTls },
): Promise<RedisProcess> {
  const port = await freePort();
  const settings: Array<[string, string]> = [['bind', '127.0.0.1'], ...listening(port, options.tls)];
  let argv: string[];
  if (options.conf !== undefined) {
    const file = path.join(dir, `sentinel-${port}.conf`);
    writeFileSync(file, [...settings.map((s) => s.join(' ')), `dir ${dir}`, ...options.conf, ''].join('\n'));
    argv = [file, '--sentinel'];
  } else {
    argv = [...settings.flatMap(([k, v]) => [`--${k}`, v]), '--save', '', '--appendonly', 'no'];
    argv.push('--dir', dir, '--dbfilename', `dump-${port}.rdb`, ...(options.args ?? []));
  }
  const child = spawn('redis-server', argv, { stdio: 'ignore' });
  const kill = async () => {
    child.kill('SIGKILL');
    await exited(child);
  };
  t.teardown(kill);
  const client = new Redis({
    host: '127.0.0.1',
    port,
    ...(options.password !== undefined && { password: options.password }),
    ...(options.tls !== undefined && { tls: { ca: readFileSync(options.tls.ca) } }),
    maxRetriesPerRequest: 1,
    retryStrategy: () => 200,
  });
  client.on('error', () => undefined);
  t.teardown(() => client.disconnect());
  await waitFor(`redis-server on port ${port} answers`, async () => (await client.ping()) === 'PONG', 10_000);
  return { port, address: `127.0.0.1:${port}`, client, kill, freeze: () => child.kill('SIGSTOP') };
}

/** The name the Sentinels monitor the primary under. */
export const PRIMARY_NAME = 'gwprimary';

/** A primary, its replica and three Sentinels watching them. */
export interface SentinelSet {
  primary: RedisProcess;
  replica: RedisProcess;
  sentinels: RedisProcess[];
}

/**
 * Starts a primary and a replica (with `password`, if any) and three Sentinels (with
 * `sentinelPassword`, if any) that declare the primary down after 1 s; resolves once every
 * Sentinel knows the replica and the two other Sentinels, so that a failover can start at once.
 */
export async function startSentinelSet(
  t: Test,
  options: { password?: string; sentinelPassword?: string; tls?: ServerTls } = {},
): Promise<SentinelSet> {
  const dir = serverDir(t);
  const { password, sentinelPassword, tls } = options;
  const auth = password === undefined ? [] : ['--requirepass', password, '--masterauth', password];
  const common = { ...(password !== undefined && { password }), ...(tls !== undefined && { tls }) };
  const primary = await startServer(t, dir, { args: auth, ...common });
  const replica = await startServer(t, dir, {
    args: [...auth, '--replicaof', '127.0.0.1', String(primary.port)],
    ...common,
  });
  await waitFor(
    'the replica is in sync',
    async () => /master_link_status:up/.test(await replica.client.info('replication')),
    20_000,
  );
  const conf = [
    `sentinel monitor ${PRIMARY_NAME} 127.0.0.1 ${primary.port} 2`,
    `sentinel down-after-milliseconds ${PRIMARY_NAME} 1000`,
    `sentinel failover-timeout ${PRIMARY_NAME} 5000`,
    `sentinel parallel-syncs ${PRIMARY_NAME} 1`,
    ...(password === undefined ? [] : [`sentinel auth-pass ${PRIMARY_NAME} ${password}`]),
    ...(sentinelPassword === undefined
      ? []
      : [`requirepass ${sentinelPassword}`, `sentinel sentinel-pass ${sentinelPassword}`]),
  ];
  const sentinels: RedisProcess[] = [];
  for (let i = 0; i < 3; i++) {
    sentinels.push(
      await startServer(t, dir, {
        conf,
        ...(sentinelPassword !== undefined && { password: sentinelPassword }),
        ...(tls !== undefined && { tls }),
      }),
    );
  }
  for (const s of sentinels) {
    await waitFor(
      `Sentinel ${s.address} knows the replica and the other Sentinels`,
      async () => {
        const replicas = (await s.client.call('SENTINEL', 'REPLICAS', PRIMARY_NAME)) as unknown[];
        const others = (await s.client.call('SENTINEL', 'SENTINELS', PRIMARY_NAME)) as unknown[];
        return replicas.length === 1 && others.length === 2;
      },
      30_000,
    );
  }
  return { primary, replica, sentinels };
}

/** A three-node Redis Cluster (no replicas): each node's process and id. */
export interface RedisClusterNodes {
  nodes: Array<RedisProcess & { id: string }>;
}

/** Starts three cluster-enabled servers (over TLS with `tls`) and joins them (`redis-cli --cluster create`). */
export async function startRedisCluster(t: Test, tls?: ServerTls): Promise<RedisClusterNodes> {
  const dir = serverDir(t);
  const started: RedisProcess[] = [];
  for (let i = 0; i < 3; i++) {
    started.push(
      await startServer(t, dir, {
        args: ['--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${i}.conf`)],
        ...(tls !== undefined && { tls }),
      }),
    );
  }
  const create = spawn(
    'redis-cli',
    [
      ...(tls === undefined ? [] : ['--tls', '--cacert', tls.ca]),
      ...[
        '--cluster',
        'create',
        ...started.map((n) => n.address),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
    ],
    { stdio: 'ignore' },
  );
  const code = await new Promise<number | null>((resolve) => create.once('exit', resolve));
  if (code !== 0) throw new Error(`redis-cli --cluster create exited with ${code}`);
  for (const n of started) {
    await waitFor(
      `cluster node ${n.address} is ok and knows the two others`,
      async () => {
        const info = (await n.client.call('CLUSTER', 'INFO')) as string;
        const peers = ((await n.client.call('CLUSTER', 'NODES')) as string).trim().split('\n');
        return (
          /cluster_state:ok/.test(info) &&
          peers.length === 3 &&
          peers.every((line) => / connected/.test(line) && !/handshake|fail|noaddr/.test(line))
        );
      },
      20_000,
    );
  }
  const nodes = await Promise.all(
    started.map(async (n) => ({ ...n, id: (await n.client.call('CLUSTER', 'MYID')) as string })),
  );
  return { nodes };
}
