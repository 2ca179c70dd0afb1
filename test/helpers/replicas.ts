/**
 * Replicas of the service behind the gateway, each a real process of its own (`replica.mjs`) that a
 * test switches between answering, answering a status, hanging, cutting connections, refusing
 * (listening no more), and that it kills (`kill -9`) and starts again on the same port. Each replica
 * tells the test of every request it received; none outlives its test (or the test process).
 */
import { type ChildProcess, spawn as spawnProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { node } from './node-child.js';
import { until } from './wait.js';

const SCRIPT = fileURLToPath(new URL('./replica.mjs', import.meta.url));

/** How a replica answers (see `replica.mjs`). */
export type ReplicaMode = 'answer' | number | 'hang' | 'reset' | 'reset-mid-body' | 'garbage';

/** A request a replica received. */
export interface Received {
  readonly method: string;
  readonly url: string;
  readonly prefer: string | null;
}

export interface ReplicaProcess {
  readonly name: string;
  /** `http://127.0.0.1:<port>`, the same across restarts. */
  readonly url: string;
  /** Every request received, across restarts. */
  readonly received: Received[];
  /** Sets how it answers (`mode`), what `GET /health` answers (`health`: 0 hangs), answers held ones. */
  set(order: { mode?: ReplicaMode; health?: number; release?: boolean }): Promise<void>;
  /** Stops listening (its port refuses) and cuts its connections; `listen` opens the port again. */
  refuse(): Promise<void>;
  listen(): Promise<void>;
  /** Kills the process (SIGKILL): its connections are cut and its port refuses. */
  stop(): Promise<void>;
  /** Starts a new process on the same port, answering. */
  start(): Promise<void>;
}

/** Starts `count` replicas named `r0`, `r1`, …, killed when `t` ends. */
export async function startReplicas(t: Test, count: number): Promise<ReplicaProcess[]> {
  const replicas = await Promise.all(Array.from({ length: count }, (_, i) => startReplica(`r${i}`)));
  t.teardown(() => Promise.all(replicas.map((r) => r.stop())));
  return replicas;
}

async function startReplica(name: string): Promise<ReplicaProcess> {
  const received: Received[] = [];
  let child: ChildProcess | undefined;
  let port = 0;
  let n = 0;
  const acks = new Set<number>();
  const spawn = async () => {
    const proc = spawnProcess(...node([SCRIPT], { coverage: false }), {
      env: { ...process.env, REPLICA_NAME: name, REPLICA_PORT: String(port) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child = proc;
    let listening = 0;
    proc.on('message', (m: { listening?: number; received?: Received; ack?: number }) => {
      if (m.listening !== undefined) listening = m.listening;
      if (m.received !== undefined) received.push(m.received);
      if (m.ack !== undefined) acks.add(m.ack);
    });
    await until(`replica ${name} listens`, () => {
      if (proc.exitCode !== null) throw new Error(`replica ${name} exited with ${proc.exitCode}`);
      return listening !== 0;
    });
    port = listening;
  };
  const order = async (what: Record<string, unknown>) => {
    const id = ++n;
    child?.send({ ...what, n: id });
    await until(`replica ${name} takes ${JSON.stringify(what)}`, () => acks.delete(id));
  };
  await spawn();
  return {
    name,
    url: `http://127.0.0.1:${port}`,
    received,
    set: (what) => order(what),
    refuse: () => order({ mode: 'refuse' }),
    listen: () => order({ mode: 'listen' }),
    async stop() {
      const proc = child;
      if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
      const gone = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGKILL');
      await gone;
    },
    start: spawn,
  };
}

/**
 * An upstream backend's (or pass-through's) configuration over `replicas`, with `over` on top
 * (`path: undefined` drops the local backend's key from the test gateway's base configuration).
 */
export function targetsConfig(replicas: readonly ReplicaProcess[], over: Record<string, unknown> = {}) {
  return {
    path: undefined,
    targets: replicas.map((r) => r.url),
    auth: { type: 'bearer', token: 'service-token' },
    ...over,
  };
}
