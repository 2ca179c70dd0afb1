/**
 * Starting what a run measures: the fixtures every run shares (the stub upstreams, the OTLP sink,
 * the member's bytes, the credentials), then each row of bench/rows.mjs in a process group of its
 * own, and one request to each before any load.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { MEMBER } from '../rows.mjs';
import { bearerHeaders, checksumFile, jwtFor, signedHeaders, startGateway, writeConfig } from './gateway.mjs';
import { startChild, stopChild } from './processes.mjs';

const TARGETS = new URL('../targets/', import.meta.url).pathname;
/** How many stub upstreams run (a row with several upstream targets uses more than one). */
const STUBS = 3;

function node(dir, name, script, args) {
  return startChild(name, process.execPath, [join(TARGETS, script), ...args], { dir }).then((entry) => ({
    ...entry,
    url: `http://127.0.0.1:${entry.ready.port}`,
  }));
}

/**
 * The fixtures (see bench/rows.mjs): the member's bytes as the gateway answers them (asked of a
 * gateway on the local store once), the stubs answering those very bytes, and the OTLP sink.
 */
export async function startFixtures(dir, data, creds, progress) {
  progress('fixtures: the member as the gateway answers it, the stub upstreams, the OTLP sink');
  const probe = await startGateway(dir, 'gateway-probe', writeConfig(data, 'gateway-probe', creds));
  const first = await fetch(probe.url + MEMBER, { headers: signedHeaders(creds, 'GET', MEMBER) });
  const member = Buffer.from(await first.arrayBuffer());
  await stopChild(probe);
  if (first.status !== 200) throw new Error(`the gateway answered ${first.status} for ${MEMBER}: ${member}`);
  const memberFile = join(dir, 'member.json');
  writeFileSync(memberFile, member);
  const memberType = first.headers.get('content-type') ?? 'application/json';
  const stubs = await Promise.all(
    Array.from({ length: STUBS }, (_, i) =>
      node(dir, `stub-${i + 1}`, 'origin.mjs', [memberFile, memberType, checksumFile(data)]),
    ),
  );
  const sink = await node(dir, 'otlp-sink', 'otlp-sink.mjs', []);
  return {
    dir,
    data,
    creds,
    member,
    memberFile,
    memberType,
    checksum: readFileSync(checksumFile(data)),
    stubs: stubs.map((s) => s.url),
    sink: `${sink.url}/v1/traces`,
    jwt: bearerHeaders(await jwtFor(creds)),
    node: (name, script, args) => node(dir, name, script, args),
  };
}

/** Resolves once 127.0.0.1:`port` accepts a connection; rejects when it does not within a second. */
function reachable(port) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.setTimeout(1000, () => socket.destroy(new Error(`nothing answers on 127.0.0.1:${port}`)));
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}

/** The gateway options of `row` with its fixtures resolved (`upstream: true | n` → the stubs' URLs). */
export function gatewayOptions(row, fx) {
  const { upstream, edit, ...rest } = row.gateway;
  const urls =
    upstream === true ? [fx.stubs[0]] : typeof upstream === 'number' ? fx.stubs.slice(0, upstream) : upstream;
  return { ...rest, upstream: urls, sink: fx.sink, fx, ...(edit && { edit }) };
}

/** The request headers of `row`, one set per identity it cycles through. */
export function headerSets(row, fx, body) {
  const method = row.method ?? 'GET';
  const extra = row.contentType ? { 'content-type': row.contentType } : {};
  if (row.auth === 'signed') {
    return Array.from({ length: row.identities ?? 1 }, (_, i) => ({
      ...extra,
      ...signedHeaders(fx.creds, method, row.path, body, i),
    }));
  }
  if (row.auth === 'jwt') return [{ ...extra, ...fx.jwt }];
  return [extra];
}

/**
 * Starts every row for run `run` (side by side: each is its own process group); resolves with the
 * targets to drive, in row order, and notes for rows that did not start (they are left out).
 */
export async function startRows(rows, fx, run, progress) {
  progress(`run ${run}: starting ${rows.length} targets`);
  const notes = [];
  const started = await Promise.all(
    rows.map((row) => {
      const name = `${row.id}-run${run}`;
      const start = async () => {
        if (!row.gateway) return row.start(fx, name);
        // A gateway whose Redis is down still answers (on_error: allow): it would be measured without it.
        if (row.gateway.rateLimit === 'redis') await reachable(6379);
        return startGateway(fx.dir, name, writeConfig(fx.data, name, fx.creds, gatewayOptions(row, fx)));
      };
      return Promise.resolve()
        .then(start)
        .catch((err) => {
          notes.push(`${row.name}: not measured (${firstLine(err)})`);
          return undefined;
        });
    }),
  );
  const targets = [];
  rows.forEach((row, i) => {
    const proc = started[i];
    if (!proc) return;
    const body = typeof row.body === 'function' ? row.body(fx) : row.body;
    const expect = row.expect === 'member' ? fx.member : row.expect === 'checksum' ? fx.checksum : row.expect;
    targets.push({
      ...row,
      proc,
      url: proc.url + row.path,
      // Each target leads its own process group (its workers included).
      pgid: proc.pid,
      body,
      headerSets: headerSets(row, fx, body),
      expect,
    });
  });
  return { targets, notes };
}

/** The reason a child did not start, on one line: its stderr's last lines after our own first line. */
function firstLine(err) {
  const lines = String(err.message)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  const reason = (lines.length > 1 ? lines.slice(1) : lines).join(' ');
  return reason.length > 240 ? `${reason.slice(0, 240)}…` : reason;
}

/**
 * One request to each target before any load: a 2xx with the expected bytes, or the reason it is
 * wrong (the target is then flagged and left out of the goals).
 */
export async function checkAnswers(targets) {
  for (const t of targets) {
    try {
      const res = await fetch(t.url, {
        method: t.method ?? 'GET',
        headers: t.headerSets[0],
        ...(t.body && { body: t.body }),
      });
      const body = Buffer.from(await res.arrayBuffer());
      if (res.status < 200 || res.status > 299) t.wrong = `answered ${res.status}: ${body.subarray(0, 200)}`;
      else if (t.expect && !body.equals(t.expect))
        t.wrong = `answered ${body.length} bytes unlike the expected`;
    } catch (err) {
      t.wrong = `request failed: ${err.message}`;
    }
  }
}
