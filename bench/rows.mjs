/**
 * What the bench measures: its rows (each one target, started in a process group of its own for
 * every run) and the goals that compare them. The one file to edit to add a row:
 *
 *   1. a row: `{ id, name, gateway: {…}, path, auth }` in ROWS (see the gateway rows below; a
 *      baseline that is not the gateway gives `start(fx, name)` instead of `gateway`);
 *   2. its goal, if it has one: `{ path, row, peer, ratio | within | extraUs }` in GOALS.
 *
 * A row's fields:
 * - `gateway`: options of the gateway's generated configuration (bench/lib/gateway.mjs `writeConfig`):
 *   `upstream: true` (asset_group_tags on the first stub; `upstream: 3`: on the first three stubs,
 *   the list handed to `edit`), `workers`, `rateLimit: 'memory' | 'redis'`, `tracing: <sample ratio>`,
 *   and `edit(config, fx)`, which may change the configuration object in any way before it is written.
 * - `path`, `method` (GET), `body` (a Buffer, or `(fx) => Buffer`), `contentType`.
 * - `auth`: 'signed' (a signed request of token 1; `identities: n` cycles through n tokens), 'jwt'
 *   (one HS256 JWT), or 'none'.
 * - `expect`: 'member' or 'checksum' (the answer's bytes are checked), or undefined (any 2xx).
 * - `latency: false`: no goal on its p99 at the fixed load (gateway rows have one by default).
 *
 * `fx` (the fixtures) holds `stubs` (the stub upstreams' URLs, three of them, each answering the
 * member, the checksum and a drained PATCH: bench/targets/origin.mjs), `sink` (an OTLP/HTTP
 * collector that takes spans and answers 200), `data` (the copy of config/ the gateways use),
 * `creds`, `member`, `checksum` and `node(name, script, args)` for a baseline in bench/targets/.
 */
import { startNginx, findNginx } from './lib/nginx.mjs';

export const MEMBER = '/api/v2/asset-group-tags/1/members/101';
/** `server.workers` of the workers row (`BENCH_WORKERS`, 2): size it to the cores the gateway gets. */
const WORKERS = Math.max(2, Math.round(Number(process.env.BENCH_WORKERS ?? 2)) || 2);
export const CHECKSUM = '/api/v2/collectors/sharphound/v2.10.0/checksum';
/** A public route of the front door (issue 28): forwarded without authentication. */
export const PUBLIC = '/api/v2/spec';

/** The rows, in table order. Ids are what goals name. */
export const ROWS = [
  // Baselines, frozen as issue 13 writes them.
  {
    id: 'bare',
    name: 'bare node:http (ceiling)',
    start: (fx, name) => fx.node(name, 'bare.mjs', [fx.memberFile, fx.memberType]),
    path: MEMBER,
    expect: 'member',
  },
  {
    id: 'undici',
    name: 'undici proxy (floor)',
    start: (fx, name) => fx.node(name, 'undici-proxy.mjs', [fx.stubs[0]]),
    path: MEMBER,
    expect: 'member',
  },
  {
    id: 'http-proxy-3',
    name: 'http-proxy-3',
    start: (fx, name) => fx.node(name, 'http-proxy3.mjs', [fx.stubs[0]]),
    path: MEMBER,
    expect: 'member',
  },
  {
    id: 'nginx',
    name: 'nginx, one worker',
    // Left out (with a note) when nginx is not installed.
    start: (fx, name) => {
      const binary = findNginx();
      if (!binary) throw new Error('nginx not installed: `apt-get install nginx-light` to include it');
      return startNginx(binary, fx.dir, new URL(fx.stubs[0]).port, name);
    },
    path: MEMBER,
    expect: 'member',
  },

  // The gateway, logging at info (one line per request), metrics on: every row its own process.
  {
    id: 'gw-checksum',
    name: 'gateway checksum cached, signed',
    gateway: {},
    path: CHECKSUM,
    auth: 'signed',
    expect: 'checksum',
  },
  {
    id: 'gw-checksum-jwt',
    name: 'gateway checksum cached, JWT',
    gateway: {},
    path: CHECKSUM,
    auth: 'jwt',
    expect: 'checksum',
  },
  {
    id: 'gw-local',
    name: 'gateway member local, signed',
    gateway: {},
    path: MEMBER,
    auth: 'signed',
    expect: 'member',
  },
  {
    id: 'gw-local-jwt',
    name: 'gateway member local, JWT',
    gateway: {},
    path: MEMBER,
    auth: 'jwt',
    expect: 'member',
  },
  {
    id: 'gw-upstream',
    name: 'gateway member upstream, signed in, re-signed out',
    gateway: { upstream: true },
    path: MEMBER,
    auth: 'signed',
    expect: 'member',
  },
  {
    id: 'gw-upstream-jwt',
    name: 'gateway member upstream, JWT in, signed out',
    gateway: { upstream: true },
    path: MEMBER,
    auth: 'jwt',
    expect: 'member',
  },
  {
    id: 'gw-targets',
    name: 'gateway member upstream, signed, three targets (least_request)',
    gateway: {
      upstream: 3,
      edit: (config, fx) => {
        const { url, ...rest } = config.backends.asset_group_tags;
        config.backends.asset_group_tags = { ...rest, targets: fx.stubs.slice(0, 3) };
      },
    },
    path: MEMBER,
    auth: 'signed',
    expect: 'member',
  },
  {
    id: 'gw-public',
    name: 'gateway public pass-through (front door: GET /api/v2/spec, no credentials)',
    gateway: {
      edit: (config, fx) => {
        config.passthrough = {
          url: fx.stubs[0],
          auth: {
            type: 'signature',
            token_id: fx.creds.upstreamTokenId,
            token_key: fx.creds.upstreamTokenKey,
          },
        };
      },
    },
    path: PUBLIC,
    auth: 'none',
    expect: 'member',
  },
  {
    id: 'gw-workers',
    name: `gateway member upstream, signed, server.workers: ${WORKERS} (primary included)`,
    gateway: { upstream: true, workers: WORKERS },
    // Issue 31 sets workers no target: explained, not judged (on 2 cores they share with the load).
    latency: false,
    path: MEMBER,
    auth: 'signed',
    expect: 'member',
  },

  // Features, each priced against the row without it. A policy of 10,000 a second (the schema's
  // largest limit) per identity, eight identities taking turns: never refused, one decision a request.
  {
    id: 'gw-ratelimit-memory',
    name: 'gateway member local, signed, rate limit (memory store)',
    gateway: { rateLimit: 'memory' },
    path: MEMBER,
    auth: 'signed',
    identities: 8,
    expect: 'member',
  },
  {
    id: 'gw-ratelimit-redis',
    name: 'gateway member local, signed, rate limit (Redis 127.0.0.1:6379)',
    gateway: { rateLimit: 'redis' },
    path: MEMBER,
    auth: 'signed',
    identities: 8,
    expect: 'member',
  },
  {
    id: 'gw-tracing-0.01',
    name: 'gateway member upstream, signed, tracing sample_ratio 0.01',
    gateway: { upstream: true, tracing: 0.01 },
    path: MEMBER,
    auth: 'signed',
    expect: 'member',
  },
  {
    id: 'gw-tracing-1',
    name: 'gateway member upstream, signed, tracing sample_ratio 1.0',
    gateway: { upstream: true, tracing: 1 },
    // Reported, not judged.
    latency: false,
    path: MEMBER,
    auth: 'signed',
    expect: 'member',
  },
];

/**
 * The goals, on the median over the runs of each run's figure:
 * - `ratio: g`: the peer's CPU µs/req over the row's at least `g` (above 1: the row is cheaper);
 * - `within: f`: the row's CPU at most (1 + f) × the peer's;
 * - `extraUs: n`: the row's CPU at most n µs/req above the peer's;
 * - none of them: the figure (the peer over the row) is reported.
 */
export const GOALS = [
  { path: 'member, local store, signed / bare node:http', row: 'gw-local', peer: 'bare', ratio: 0.5 },
  { path: 'member, local store, JWT / bare node:http', row: 'gw-local-jwt', peer: 'bare', ratio: 0.5 },
  { path: 'checksum, cache hit, signed / bare node:http', row: 'gw-checksum', peer: 'bare', ratio: 0.5 },
  { path: 'checksum, cache hit, JWT / bare node:http', row: 'gw-checksum-jwt', peer: 'bare', ratio: 0.5 },
  {
    path: 'member via upstream, re-signed, signed in / undici proxy',
    row: 'gw-upstream',
    peer: 'undici',
    ratio: 0.8,
  },
  {
    path: 'member via upstream, re-signed, JWT in / undici proxy',
    row: 'gw-upstream-jwt',
    peer: 'undici',
    ratio: 0.8,
  },
  {
    path: 'member via upstream, signed in / http-proxy-3',
    row: 'gw-upstream',
    peer: 'http-proxy-3',
    ratio: 1.0,
  },
  {
    path: 'member via upstream, JWT in / http-proxy-3',
    row: 'gw-upstream-jwt',
    peer: 'http-proxy-3',
    ratio: 1.0,
  },
  { path: 'member via upstream, signed in / nginx', row: 'gw-upstream', peer: 'nginx' },
  // Issue 30: balancing among three targets costs at most 5 % of CPU per request over one target.
  { path: 'three upstream targets / one', row: 'gw-targets', peer: 'gw-upstream', within: 0.05 },
  // Issue 28: a public request costs at most the undici proxy's CPU × 1.25.
  {
    path: 'public pass-through, no authentication / undici proxy',
    row: 'gw-public',
    peer: 'undici',
    ratio: 0.8,
  },
  {
    path: 'rate limit, Redis store, over none (µs/req)',
    row: 'gw-ratelimit-redis',
    peer: 'gw-local',
    extraUs: 20,
  },
  {
    path: 'rate limit, memory store, over none (µs/req)',
    row: 'gw-ratelimit-memory',
    peer: 'gw-local',
    extraUs: 'report',
  },
  { path: 'tracing at sample_ratio 0.01 / off', row: 'gw-tracing-0.01', peer: 'gw-upstream', within: 0.05 },
  { path: 'tracing at sample_ratio 1.0 / off', row: 'gw-tracing-1', peer: 'gw-upstream', within: 'report' },
  {
    path: 'server.workers: 2 / one process (CPU per request)',
    row: 'gw-workers',
    peer: 'gw-upstream',
    within: 'report',
  },
];

/** The row every latency goal compares with, and the factor its p99 may be multiplied by. */
export const LATENCY = { peer: 'undici', p99Factor: 2 };
