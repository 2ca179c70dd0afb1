/**
 * Starts every target of the bench, each in its own process (group), and describes each as
 * `{name, role, url, headers, expect, proc, pgid}`: the stub upstream, the bare server (the same
 * bytes), the undici proxy, http-proxy-3, nginx when installed, and the gateway in each mode with a
 * signed request and with a JWT, each row in a process of its own.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bearerHeaders, checksumFile, jwtFor, signedHeaders, startGateway, writeConfig } from './gateway.mjs';
import { findNginx, startNginx } from './nginx.mjs';
import { startChild } from './processes.mjs';

const TARGETS = new URL('../targets/', import.meta.url).pathname;
export const MEMBER = '/api/v2/asset-group-tags/1/members/101';
export const CHECKSUM = '/api/v2/collectors/sharphound/v2.10.0/checksum';
/** A public route of the front door (issue 28): forwarded without authentication. */
export const PUBLIC = '/api/v2/spec';

function node(dir, name, script, args) {
  return startChild(name, process.execPath, [join(TARGETS, script), ...args], { dir }).then((entry) => ({
    ...entry,
    url: `http://127.0.0.1:${entry.ready.port}`,
  }));
}

/**
 * Starts the targets; `dir` holds the processes' output, `data` the copy of config/. Resolves with
 * the targets in table order and the notes to print (nginx missing, workers not available).
 */
export async function startTargets(dir, data, creds, progress, workerCount = 2) {
  const notes = [];
  progress('starting the gateway on the local stores');
  const localConfig = writeConfig(data, 'gateway-local', creds);
  const local = await startGateway(dir, 'gateway-local', localConfig);

  // The stub and the bare server answer exactly the gateway's own bytes for the member.
  const first = await fetch(local.url + MEMBER, { headers: signedHeaders(creds, 'GET', MEMBER) });
  const member = Buffer.from(await first.arrayBuffer());
  if (first.status !== 200) throw new Error(`the gateway answered ${first.status} for ${MEMBER}: ${member}`);
  const memberFile = join(dir, 'member.json');
  writeFileSync(memberFile, member);
  const originArgs = [
    memberFile,
    first.headers.get('content-type') ?? 'application/json',
    checksumFile(data),
  ];

  progress('starting the stub upstream, then the bare server, the proxies and the other gateways');
  // Three replicas of the stub: the first is every upstream row's; all three the targets row's.
  const [stub, stub2, stub3] = await Promise.all(
    ['stub', 'stub-2', 'stub-3'].map((name) => node(dir, name, 'origin.mjs', originArgs)),
  );
  const binary = findNginx();
  if (!binary) notes.push('nginx not installed: `apt-get install nginx-light` to include it');
  const workersConfig = writeConfig(data, 'gateway-workers', creds, {
    upstream: stub.url,
    workers: workerCount,
  });
  // Started side by side: each is its own process, and starting them one by one only costs time.
  const upstreamConfig = writeConfig(data, 'gateway-upstream', creds, { upstream: stub.url });
  const targetsConfig = writeConfig(data, 'gateway-targets', creds, {
    upstream: [stub.url, stub2.url, stub3.url],
  });
  const [
    bare,
    undici,
    hp3,
    nginx,
    upstream,
    workers,
    limited,
    checksumSigned,
    checksumJwt,
    localJwt,
    upstreamJwt,
    threeTargets,
    frontDoor,
  ] = await Promise.all([
    node(dir, 'bare', 'bare.mjs', [memberFile, first.headers.get('content-type') ?? 'application/json']),
    node(dir, 'undici-proxy', 'undici-proxy.mjs', [stub.url]),
    node(dir, 'http-proxy-3', 'http-proxy3.mjs', [stub.url]),
    binary
      ? startNginx(binary, dir, stub.ready.port).catch((err) => {
          notes.push(`nginx did not start: ${firstLine(err)}`);
          return undefined;
        })
      : undefined,
    startGateway(dir, 'gateway-upstream', upstreamConfig),
    startGateway(dir, 'gateway-workers', workersConfig).catch((err) => {
      notes.push(`workers: not available (server.workers: ${workerCount} did not start: ${firstLine(err)})`);
      return undefined;
    }),
    startGateway(
      dir,
      'gateway-rate-limit',
      writeConfig(data, 'gateway-rate-limit', creds, { rateLimit: true }),
    ),
    // Every row its own process: one row's garbage, JIT work or idle-time housekeeping is never
    // charged to another's (the same configuration, the same data).
    startGateway(dir, 'gateway-checksum', localConfig),
    startGateway(dir, 'gateway-checksum-jwt', localConfig),
    startGateway(dir, 'gateway-local-jwt', localConfig),
    startGateway(dir, 'gateway-upstream-jwt', upstreamConfig),
    startGateway(dir, 'gateway-targets', targetsConfig),
    startGateway(dir, 'gateway-public', writeConfig(data, 'gateway-public', creds, { passthrough: stub.url })),
  ]);

  const jwt = bearerHeaders(await jwtFor(creds));
  const checksum = readFileSync(checksumFile(data));
  const signed = (target) => signedHeaders(creds, 'GET', target);
  const targets = [
    { name: 'bare node:http (ceiling)', role: 'bare', proc: bare, path: MEMBER, expect: member },
    { name: 'undici proxy (floor)', role: 'undici', proc: undici, path: MEMBER, expect: member },
    { name: 'http-proxy-3', role: 'http-proxy-3', proc: hp3, path: MEMBER, expect: member },
    ...(nginx ? [{ name: 'nginx', role: 'nginx', proc: nginx, path: MEMBER, expect: member }] : []),
    {
      name: 'gateway checksum cached, signed',
      role: 'gw-checksum',
      proc: checksumSigned,
      path: CHECKSUM,
      headers: signed(CHECKSUM),
      expect: checksum,
    },
    {
      name: 'gateway checksum cached, JWT',
      proc: checksumJwt,
      path: CHECKSUM,
      headers: jwt,
      expect: checksum,
    },
    {
      name: 'gateway member local, signed',
      role: 'gw-local',
      proc: local,
      path: MEMBER,
      headers: signed(MEMBER),
      expect: member,
    },
    { name: 'gateway member local, JWT', proc: localJwt, path: MEMBER, headers: jwt, expect: member },
    {
      name: 'gateway member + rate limit (local, signed, 10,000/1 s policy; driven at 5,000 req/s)',
      role: 'gw-rate-limit',
      proc: limited,
      path: MEMBER,
      headers: signed(MEMBER),
      expect: member,
      // One identity at most 10,000 a second (§7's largest limit): driven below it, every request is
      // admitted, and the row measures the decision's cost, not 429s.
      rate: 5000,
    },
    {
      name: 'gateway member upstream, signed',
      role: 'gw-upstream',
      proc: upstream,
      path: MEMBER,
      headers: signed(MEMBER),
      expect: member,
    },
    { name: 'gateway member upstream, JWT', proc: upstreamJwt, path: MEMBER, headers: jwt, expect: member },
    {
      name: 'gateway member upstream, signed, 3 targets (least_request)',
      role: 'gw-targets',
      proc: threeTargets,
      path: MEMBER,
      headers: signed(MEMBER),
      expect: member,
    },
    {
      name: 'gateway public pass-through (front door, no credentials)',
      role: 'gw-public',
      proc: frontDoor,
      path: PUBLIC,
      expect: member,
    },
    workers
      ? {
          name: `gateway member upstream, signed, ${workerCount} workers`,
          role: 'gw-workers',
          proc: workers,
          path: MEMBER,
          headers: signed(MEMBER),
          expect: member,
        }
      : {
          name: `gateway member upstream, signed, ${workerCount} workers`,
          unavailable: 'workers: not available',
        },
  ];
  for (const t of targets) {
    if (!t.proc) continue;
    t.url = t.proc.url + t.path;
    // Each target is the leader of its own process group (its workers included).
    t.pgid = t.proc.pid;
  }
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
 * wrong (the table flags it).
 */
export async function checkAnswers(targets) {
  for (const t of targets) {
    if (t.unavailable) continue;
    try {
      const res = await fetch(t.url, { headers: t.headers ?? {} });
      const body = Buffer.from(await res.arrayBuffer());
      if (res.status < 200 || res.status > 299) t.wrong = `answered ${res.status}: ${body.subarray(0, 200)}`;
      else if (t.expect && !body.equals(t.expect))
        t.wrong = `answered ${body.length} bytes unlike the member's`;
    } catch (err) {
      t.wrong = `request failed: ${err.message}`;
    }
  }
}
