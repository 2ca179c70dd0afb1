#!/usr/bin/env node
/**
 * The side-by-side benchmark (`npm run bench`, never part of `npm test`): the rows of
 * bench/rows.mjs, each target in its own process group on loopback, driven by autocannon with the
 * same fixed number of keep-alive requests over the same connections, targets interleaved round
 * after round, every answer checked; the whole comparison run three times, every target started
 * afresh for each run. The figure that matters is each target's own CPU time per request (read from
 * /proc): on a machine shared with the load generator and the upstream, req/s mixes the target's
 * cost with everyone else's. Then every target at a fixed offered load for its latency, the RSS of
 * concurrent 1 MiB uploads and in-process micro-benchmarks. Prints the tables and writes them to
 * bench/results.md.
 *
 *   npm run bench [-- --quick] [-- --check] [-- --only=id,id,…]
 *   env: BENCH_RUNS (3), BENCH_REQUESTS (per round, 10000), BENCH_ROUNDS (3), BENCH_WARMUP (3000),
 *        BENCH_CONNECTIONS (50), BENCH_LATENCY_SECONDS (2), BENCH_RATE (the fixed load; default half
 *        the undici proxy's req/s in each run), BENCH_WORKERS (server.workers of the workers row, 2)
 *
 * `--check` exits 1 when a goal is missed on the median of the runs, or a target answered wrongly.
 * `--only` measures those rows alone (and the peers their goals name), for a quick look at a few.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuAvailable } from './lib/cpu.mjs';
import { copySampleData, createCredentials, startGateway, writeConfig } from './lib/gateway.mjs';
import { measureRun } from './lib/measure.mjs';
import { microBenchmarks } from './lib/micro.mjs';
import { installCleanup, stopAll, stopChild } from './lib/processes.mjs';
import { header } from './lib/report.mjs';
import { rssCheck } from './lib/rss.mjs';
import { checkAnswers, startFixtures, startRows } from './lib/setup.mjs';
import { summarize } from './lib/summary.mjs';
import { GOALS, LATENCY, ROWS } from './rows.mjs';

const RESULTS = new URL('./results.md', import.meta.url).pathname;
const VARS = [
  'BENCH_RUNS',
  'BENCH_REQUESTS',
  'BENCH_ROUNDS',
  'BENCH_WARMUP',
  'BENCH_CONNECTIONS',
  'BENCH_LATENCY_SECONDS',
  'BENCH_RATE',
  'BENCH_WORKERS',
];

function options(argv, env) {
  const only = argv
    .find((a) => a.startsWith('--only='))
    ?.slice('--only='.length)
    .split(',');
  const unknown = argv.filter((a) => !['--quick', '--check'].includes(a) && !a.startsWith('--only='));
  if (unknown.length > 0) {
    throw new Error(
      `unknown argument ${unknown[0]} (usage: npm run bench [-- --quick] [-- --check] [-- --only=ids])`,
    );
  }
  const quick = argv.includes('--quick');
  const num = (name, fallback) => {
    if (env[name] === undefined || env[name] === '') return fallback;
    const n = Number(env[name]);
    if (!(n > 0)) throw new Error(`${name} must be a positive number`);
    return n;
  };
  return {
    quick,
    only,
    check: argv.includes('--check'),
    runs: Math.round(num('BENCH_RUNS', 3)),
    requests: Math.round(num('BENCH_REQUESTS', quick ? 2000 : 10_000)),
    // The lowest of three rounds per run, and the median of three runs: a disturbed round (the host's
    // stalls are charged to whichever process runs) is dropped, and one lucky run decides nothing.
    rounds: Math.round(num('BENCH_ROUNDS', quick ? 1 : 3)),
    warmup: Math.round(num('BENCH_WARMUP', quick ? 500 : 3000)),
    connections: Math.round(num('BENCH_CONNECTIONS', 50)),
    latencySeconds: num('BENCH_LATENCY_SECONDS', quick ? 0.5 : 2),
    rate: env.BENCH_RATE ? Math.round(num('BENCH_RATE')) : undefined,
    latencyPeer: LATENCY.peer,
    microMs: quick ? 250 : 1000,
  };
}

function commandLine(argv, env) {
  const vars = VARS.filter((name) => env[name])
    .map((name) => `${name}=${env[name]} `)
    .join('');
  const run = env.npm_lifecycle_event === 'bench' ? 'npm run bench' : 'node bench/run.mjs';
  return `${vars}${run}${argv.length > 0 ? `${run.startsWith('npm') ? ' --' : ''} ${argv.join(' ')}` : ''}`;
}

/** The rows to measure: all, or those named by `--only` and the peers their goals compare them with. */
function rowsFor(only) {
  if (!only) return ROWS;
  const ids = new Set(only);
  for (const g of GOALS) if (ids.has(g.row)) ids.add(g.peer);
  ids.add(LATENCY.peer);
  const unknown = only.filter((id) => !ROWS.some((r) => r.id === id));
  if (unknown.length > 0) throw new Error(`--only: no row ${unknown.join(', ')} in bench/rows.mjs`);
  return ROWS.filter((r) => ids.has(r.id));
}

const started = Date.now();
const progress = (s) =>
  process.stderr.write(`· ${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s  ${s}\n`);

async function main() {
  const argv = process.argv.slice(2);
  const opts = options(argv, process.env);
  if (!cpuAvailable()) throw new Error('the bench reads CPU times from /proc: run it on Linux');
  const rows = rowsFor(opts.only);
  // Bounded in time whatever happens: every row at 1,000 req/s at the very least, plus starts.
  const perRun = (opts.warmup + opts.requests * opts.rounds) / 1000 + opts.latencySeconds * 4 + 30;
  const budget = rows.length * perRun * opts.runs + 300;
  setTimeout(() => {
    process.stderr.write(`the bench ran past ${budget.toFixed(0)} s: stopping\n`);
    stopAll().finally(() => process.exit(1));
  }, budget * 1000).unref();

  const head = header(commandLine(argv, process.env));
  for (const line of head) console.log(line);

  const dir = mkdtempSync(join(tmpdir(), 'bh-bench-'));
  installCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const data = join(dir, 'data');
  copySampleData(data);
  const creds = createCredentials();
  let keep = true;
  let missed = [];
  try {
    const fx = await startFixtures(dir, data, creds, progress);
    const runs = [];
    const notes = new Set();
    for (let run = 1; run <= opts.runs; run++) {
      const { targets, notes: runNotes } = await startRows(rows, fx, run, progress);
      runNotes.forEach((n) => notes.add(n));
      await checkAnswers(targets);
      runs.push(await measureRun(targets, opts, progress, run));
      // This run's targets go; the stubs and the sink stay for the next.
      await Promise.all(targets.map((t) => stopChild(t.proc)));
    }
    await stopAll();

    let rss;
    let rssWarm;
    let micro;
    if (!opts.only) {
      // Each on a fresh gateway: after one upload alone (warmed, the figure that counts), then as started.
      const rssRuns = [];
      for (const warm of [true, false]) {
        progress(`RSS: 20 concurrent signed 1 MiB uploads${warm ? ', after one upload alone' : ''}`);
        const name = warm ? 'gateway-rss-warm' : 'gateway-rss';
        const gw = await startGateway(dir, name, writeConfig(data, name, creds));
        rssRuns.push(await rssCheck({ ...gw, creds }, data, { warm }));
        await stopChild(gw);
      }
      [rssWarm, rss] = rssRuns;
      progress('micro-benchmarks');
      micro = await microBenchmarks(creds, opts.microMs);
    }

    const { flagged, goals, latency } = summarize(
      { head, opts, rows, runs, notes: [...notes], rss, rssWarm, micro },
      RESULTS,
    );
    if (!opts.only) {
      // Rate limits (issue 15): one decision with the memory store, added to the printout and the file.
      progress('rate limits: one decision with the memory store');
      const { rateLimitBenchmarks, rateLimitTable } = await import('./ratelimit.mjs');
      const rateLimits = rateLimitTable(rateLimitBenchmarks(opts.microMs));
      console.log(rateLimits.join('\n'));
      appendFileSync(RESULTS, `${rateLimits.join('\n')}\n`);
      // The audit trail (issue 29): the PATCH path's CPU per change with the trail on and off, for
      // the file store and PostgreSQL (bench/audit.mjs, in a process of its own).
      progress('audit trail: CPU per change, on and off, file and PostgreSQL');
      const audit = spawnSync(process.execPath, [new URL('./audit.mjs', import.meta.url).pathname, '2000'], {
        encoding: 'utf8',
      });
      const auditLines = [
        '',
        '## Audit trail: CPU per change (bench/audit.mjs 2000)',
        '',
        '```',
        ...(audit.stdout ?? '').trimEnd().split('\n'),
        ...(audit.status === 0
          ? []
          : [`(exit ${audit.status}: ${(audit.stderr ?? '').trim().split('\n')[0]})`]),
        '```',
      ];
      console.log(auditLines.join('\n'));
      appendFileSync(RESULTS, `${auditLines.join('\n')}\n`);
    }
    keep = flagged.length > 0;
    missed = [
      ...goals.filter((g) => g.counts && g.verdict !== 'met').map((g) => `${g.path}: ${g.verdict}`),
      ...latency.filter((l) => l.counts && l.verdict !== 'met').map((l) => `p99 of ${l.name}: ${l.verdict}`),
      ...flagged,
    ];
  } finally {
    await stopAll();
    // The processes' output (the gateway's log lines among it) stays only when something went wrong.
    if (keep) process.stderr.write(`the targets' output is kept in ${dir}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
  if (opts.check && missed.length > 0) {
    process.stderr.write(
      `--check: ${missed.length} goal(s) missed or not measured:\n  ${missed.join('\n  ')}\n`,
    );
    process.exitCode = 1;
  }
}

main().catch(async (err) => {
  process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
  await stopAll();
  process.exit(1);
});
