/**
 * A reload never fails a request (contract §2): two gateway processes (the real CLI) on PostgreSQL
 * stores and an upstream collectors backend take the same steady mixed load side by side, with the
 * same `pg_terminate_backend` of their sessions at the same moments; one of them gets a SIGHUP every
 * second, alternating its unchanged file and one with another log level and other pool sizes. Both
 * must answer with the same statuses, and the reloaded one with no 5xx the other lacks.
 */
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { baseConfig, call, merge, ROOT, type TestResponse } from './helpers/gateway.js';
import { scrape } from './helpers/metrics.js';
import { createDatabase, importStores, requirePostgres, sql } from './helpers/postgres.js';
import { type ListeningGateway, startGatewayProcess, stopGatewayProcess } from './helpers/process.js';
import { patchInParts } from './helpers/upload.js';
import { startUpstream, type StubUpstream, upstreamBackend } from './helpers/upstream.js';
import { until } from './helpers/wait.js';

/** Periods of load, two seconds each, each with two SIGHUPs. */
const PERIODS = 16;
/** Requests per period and gateway, started `GAP` ms apart, taken by whichever client is free. */
const PER_PERIOD = 50;
const GAP = 40;
const CLIENTS = 4;
/** How long a PATCH's body takes to arrive. */
const BODY_PAUSE = 50;

const sample = (name: string) => JSON.parse(readFileSync(path.join(ROOT, 'config', name), 'utf8'));

type Kind = 'member' | 'checksum' | 'patch';

/** Request `i` of the load, the same for both gateways: a look-up, a checksum or a PATCH, some of them 404s. */
function planned(i: number): { kind: Kind; send(gw: { port: number }): Promise<TestResponse> } {
  const variant = Math.floor(i / 3) % 4;
  switch (i % 3) {
    case 0: {
      const target = `/api/v2/asset-group-tags/1/members/${[101, 102, 101, 999][variant]}`;
      return { kind: 'member', send: (gw) => call(gw, { method: 'GET', target }) };
    }
    case 1: {
      const release = ['latest', 'v2.10.0', 'v9.9.9', 'latest'][variant];
      const target = `/api/v2/collectors/sharphound/${release}/checksum`;
      return { kind: 'checksum', send: (gw) => call(gw, { method: 'GET', target }) };
    }
    default: {
      const target = `/api/v2/sso-providers/${[1, 3, 1, 99][variant]}`;
      return { kind: 'patch', send: (gw) => slowPatch(gw, target, `renamed ${i}`) };
    }
  }
}

/**
 * A signed PATCH whose body arrives in two parts `BODY_PAUSE` ms apart, as an upload over a real
 * network does: the request is in flight, on the configuration it started with, for that long.
 */
async function slowPatch(gw: { port: number }, target: string, name: string): Promise<TestResponse> {
  const held = patchInParts(gw, target, name);
  await new Promise((resolve) => setTimeout(resolve, BODY_PAUSE));
  return held.rest();
}

/** What one gateway answered, per kind: each status with the error messages that came with it. */
type Answers = Record<Kind, Array<{ status: number; message: string }>>;

/**
 * Runs period `k` of the plan against `gw`, its requests paced from `start` (a `performance.now()`
 * time); `midway` is called as the period's middle request goes out. Resolves once all are answered.
 */
async function period(gw: { port: number }, k: number, start: number, answers: Answers, midway?: () => void) {
  let next = 0;
  const client = async () => {
    for (let j = next++; j < PER_PERIOD; j = next++) {
      const wait = start + j * GAP - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (j === PER_PERIOD >> 1) midway?.();
      const { kind, send } = planned(k * PER_PERIOD + j);
      answers[kind].push(await send(gw).then(outcome, (err: Error) => ({ status: 0, message: err.message })));
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
}

/** A response's status and, for an error, its envelope's message (no id, no timestamp). */
function outcome(res: TestResponse): { status: number; message: string } {
  if (res.status < 400) return { status: res.status, message: '' };
  try {
    return { status: res.status, message: String(res.json().errors[0].message) };
  } catch {
    return { status: res.status, message: res.body.toString().slice(0, 200) };
  }
}

/**
 * The failed answers (5xx, or none) as `kind status message #n`, numbered by occurrence so that two
 * lists of them compare as multisets.
 */
function failures(answers: Answers): string[] {
  const seen = new Map<string, number>();
  return Object.entries(answers).flatMap(([kind, list]) =>
    list
      .filter((a) => a.status === 0 || a.status >= 500)
      .map((a) => {
        const what = `${kind} ${a.status} ${a.message}`;
        const n = (seen.get(what) ?? 0) + 1;
        seen.set(what, n);
        return `${what} #${n}`;
      }),
  );
}

/** Each kind's statuses, counted. */
const tally = (answers: Answers) =>
  Object.fromEntries(
    Object.entries(answers).map(([kind, list]) => {
      const counts: Record<number, number> = {};
      for (const { status } of list) counts[status] = (counts[status] ?? 0) + 1;
      return [kind, counts];
    }),
  );

/** The upstream: a checksum per release, 404 for v9.9.9 (which is never cached, so always asked). */
async function collectorsUpstream(t: Test): Promise<StubUpstream> {
  const stub = await startUpstream();
  t.teardown(() => stub.close());
  stub.respond = (req, res) => {
    if (req.url?.includes('/v9.9.9/')) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"http_status":404,"errors":[{"context":"","message":"no such release"}]}');
      return;
    }
    res.writeHead(200, { 'Content-Disposition': 'attachment; filename="sharphound-v2.10.0.zip.sha256"' });
    res.end('0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef');
  };
  return stub;
}

/** The configuration of a gateway on the database at `url`; `changed` is the reload's other file. */
function configuration(url: string, stub: StubUpstream, changed: boolean): string {
  const database = (size: number) => ({
    type: 'postgres',
    url,
    path: undefined,
    pool_size: size,
    connect_timeout: '10s',
  });
  return stringify(
    merge(baseConfig(), {
      // A replaced configuration closed under a request is logged once this has passed.
      server: { shutdown_grace: '10s' },
      logging: { level: changed ? 'warn' : 'info' },
      checksum_cache: { latest_ttl: '200ms' },
      backends: {
        collectors: upstreamBackend(stub, { connections: changed ? 3 : 6 }),
        sso_providers: database(changed ? 2 : 4),
        asset_group_tags: database(changed ? 2 : 4),
      },
    }),
  );
}

if (await requirePostgres(t)) {
  t.test('a SIGHUP every second under load answers as the run without reloads', async (t) => {
    const stub = await collectorsUpstream(t);
    const stores = { sso: sample('sso-providers.json'), tags: sample('asset-group-tags.json') };
    const urls = await Promise.all([createDatabase(t), createDatabase(t)]);
    await Promise.all(urls.map((url) => importStores(t, url, stores)));
    const names = urls.map((url) => new URL(url).pathname.slice(1));
    const dir = mkdtempSync(path.join(tmpdir(), 'gateway-reload-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const files = urls.map((url, k) => {
      const file = path.join(dir, `gateway-${k}.yaml`);
      writeFileSync(file, configuration(url, stub, false));
      return file;
    });
    const started = await Promise.all(files.map((file) => startGatewayProcess(t, file)));
    t.teardown(() => Promise.all(started.map(stopGatewayProcess)));
    const [control, reloaded] = started as [ListeningGateway, ListeningGateway];
    const [controlUrl, reloadedUrl] = urls as [string, string];
    const reloadedFile = files[1] as string;

    // Each period: the sessions of both gateways terminated while nothing is in flight (a statement
    // cut under a request is a 503 by contract, in either run), a SIGHUP with the first requests
    // that follow, and another amid the load. The file alternates between unchanged and changed.
    const answers: [Answers, Answers] = [
      { member: [], checksum: [], patch: [] },
      { member: [], checksum: [], patch: [] },
    ];
    let sent = 0;
    const hup = () => {
      const changed = sent % 2 === 1;
      writeFileSync(`${reloadedFile}.next`, configuration(reloadedUrl, stub, changed));
      renameSync(`${reloadedFile}.next`, reloadedFile);
      reloaded.child.kill('SIGHUP');
      sent++;
    };
    let terminated = 0;
    const began = performance.now();
    for (let k = 0; k < PERIODS; k++) {
      // pg_terminate_backend with a timeout returns once the session has ended.
      const rows = await sql(
        controlUrl,
        `SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
          WHERE datname = ANY($1) AND application_name = 'bh-gateway'`,
        [names],
      );
      terminated += rows.length;
      const start = performance.now();
      hup();
      await Promise.all([period(control, k, start, answers[0]), period(reloaded, k, start, answers[1], hup)]);
    }
    const [fromControl, fromReloaded] = answers;
    t.comment(`load ran ${Math.round(performance.now() - began)} ms`);
    t.ok(terminated >= 2 * PERIODS, `${terminated} sessions terminated`);

    const admin = `http://127.0.0.1:${reloaded.adminPort}`;
    const counted = async () =>
      ((await scrape(admin, 'gateway_config_reloads_total', { result: 'ok' })) ?? 0) +
      ((await scrape(admin, 'gateway_config_reloads_total', { result: 'error' })) ?? 0);
    await until('every reload counted', async () => (await counted()) === sent);
    t.equal(
      await scrape(admin, 'gateway_config_reloads_total', { result: 'ok' }),
      sent,
      'every reload applied',
    );
    t.same(tally(fromReloaded), tally(fromControl), 'the same statuses per kind of request');
    const inControl = failures(fromControl);
    t.same(
      failures(fromReloaded).filter((f) => !inControl.includes(f)),
      [],
      'no 5xx (nor cut connection) with reloads that the run without them lacks',
    );

    // A replaced configuration's pool closes once its last request has ended (a pool left open
    // would keep a health-checked session): what remains is one pool's sessions at most.
    const sessions = async () =>
      (
        await sql(
          controlUrl,
          `SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = 'bh-gateway'`,
          [names[1]],
        )
      ).length;
    await until('the replaced pools closed', async () => (await sessions()) <= 4);
    t.notOk(
      reloaded.lines.some(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('replaced configuration closed'),
      ),
      'none was closed under a request: every request released the configuration it held',
    );
    for (const line of reloaded.lines.filter((l) => l.msg === 'request' && (l.status as number) >= 500))
      t.comment(`reloaded: ${JSON.stringify(line)}`);
    for (const line of control.lines.filter((l) => l.msg === 'request' && (l.status as number) >= 500))
      t.comment(`control: ${JSON.stringify(line)}`);
  });
}
