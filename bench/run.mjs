#!/usr/bin/env node
/**
 * The side-by-side benchmark (`npm run bench`, never part of `npm test`): every target in its own
 * process on loopback, driven by autocannon with the same fixed number of keep-alive requests over
 * the same connections, targets alternating round after round, every answer checked. The figure
 * that matters is each target's own CPU time per request (read from /proc): on a machine shared with
 * the load generator and the upstream, req/s mixes the target's cost with everyone else's. Then the
 * RSS of concurrent 1 MiB uploads and in-process micro-benchmarks. Prints the tables and writes them
 * to bench/results.md.
 *
 *   npm run bench [-- --quick] [-- --check]
 *   env: BENCH_REQUESTS (per run, default 20000), BENCH_CONNECTIONS (50), BENCH_ROUNDS (5),
 *        BENCH_WORKERS (server.workers of the workers target, 2)
 *
 * `--check` exits 1 when a target ratio of issue 13 is missed (within 10 % counts as met).
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuAvailable } from './lib/cpu.mjs';
import { copySampleData, createCredentials, startGateway, writeConfig } from './lib/gateway.mjs';
import { drive, failuresOf } from './lib/load.mjs';
import { microBenchmarks } from './lib/micro.mjs';
import { hasExited, installCleanup, stopAll, stopChild } from './lib/processes.mjs';
import { header } from './lib/report.mjs';
import { rssCheck } from './lib/rss.mjs';
import { checkAnswers, startTargets } from './lib/setup.mjs';
import { summarize } from './lib/summary.mjs';

const RESULTS = new URL('./results.md', import.meta.url).pathname;
const FLAGS = ['--quick', '--check'];

function options(argv, env) {
  const unknown = argv.filter((a) => !FLAGS.includes(a));
  if (unknown.length > 0) {
    throw new Error(`unknown argument ${unknown[0]} (usage: npm run bench [-- --quick] [-- --check])`);
  }
  const quick = argv.includes('--quick');
  const num = (name, fallback) => {
    if (env[name] === undefined || env[name] === '') return fallback;
    const n = Number(env[name]);
    if (!(n > 0)) throw new Error(`${name} must be a positive number`);
    return Math.round(n);
  };
  const requests = num('BENCH_REQUESTS', quick ? 4000 : 20_000);
  return {
    quick,
    check: argv.includes('--check'),
    requests,
    connections: num('BENCH_CONNECTIONS', 50),
    workers: num('BENCH_WORKERS', 2),
    // The lowest of five rounds: on a shared VM the host's stalls are charged to whichever process
    // runs (/proc/stat's steal column reads 0 here), a disturbed round can cost twice a calm one, and
    // with three rounds a target still met no calm round in some runs. Every round is printed.
    rounds: num('BENCH_ROUNDS', quick ? 1 : 5),
    warmup: Math.min(5000, Math.round(requests / 4)),
    microMs: quick ? 250 : 1000,
  };
}

function commandLine(argv, env) {
  const vars = ['BENCH_REQUESTS', 'BENCH_CONNECTIONS', 'BENCH_ROUNDS', 'BENCH_WORKERS']
    .filter((name) => env[name])
    .map((name) => `${name}=${env[name]} `)
    .join('');
  const run = env.npm_lifecycle_event === 'bench' ? 'npm run bench' : 'node bench/run.mjs';
  return `${vars}${run}${argv.length > 0 ? `${run.startsWith('npm') ? ' --' : ''} ${argv.join(' ')}` : ''}`;
}

const started = Date.now();
const progress = (s) =>
  process.stderr.write(`· ${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s  ${s}\n`);
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Round-robin: every round drives every target once, each round starting one target further on. */
async function measure(targets, opts) {
  const live = targets.filter((t) => !t.unavailable && !t.wrong);
  progress(`warm-up: ${opts.warmup} requests per target`);
  for (const t of live) {
    t.runs = [];
    await drive(t, { connections: opts.connections, amount: opts.warmup });
  }
  for (let round = 0; round < opts.rounds; round++) {
    const order = live.map((_, i) => live[(i + round) % live.length]);
    for (const t of order) {
      if (t.crashed) continue;
      progress(`round ${round + 1}/${opts.rounds}: ${t.name}`);
      t.runs.push(await drive(t, { connections: opts.connections, amount: opts.requests }));
      if (hasExited(t.proc)) t.crashed = `${t.proc.name} exited during the run (see its .err file)`;
    }
  }
  for (const t of live) {
    const runs = t.runs;
    if (runs.length === 0) continue;
    const lowest = runs.reduce((a, b) => (b.cpuUs < a.cpuUs ? b : a));
    t.cpuUs = lowest.cpuUs;
    t.systemUs = lowest.systemUs;
    t.rounds = runs.map((r) => r.cpuUs);
    t.rps = mean(runs.map((r) => r.rps));
    t.p50 = mean(runs.map((r) => r.p50));
    t.p99 = mean(runs.map((r) => r.p99));
    t.requests = runs.reduce((n, r) => n + r.requests, 0);
    t.mismatches = runs.reduce((n, r) => n + r.mismatches, 0);
    t.errors = runs.reduce((n, r) => n + r.errors, 0);
    t.timeouts = runs.reduce((n, r) => n + r.timeouts, 0);
    t.failures = runs.reduce((n, r) => n + failuresOf(r), 0) + (t.crashed ? 1 : 0);
    t.statuses = {};
    for (const r of runs)
      for (const [c, n] of Object.entries(r.statuses)) t.statuses[c] = (t.statuses[c] ?? 0) + n;
  }
  for (const t of targets) if (t.wrong) t.failures = 1;
}

async function main() {
  const argv = process.argv.slice(2);
  const opts = options(argv, process.env);
  if (!cpuAvailable()) throw new Error('the bench reads CPU times from /proc: run it on Linux');
  // Bounded in time whatever happens: 15 targets at 2,000 req/s at the very least, plus starts.
  const budget = ((opts.warmup + opts.requests * opts.rounds) * 15) / 2000 + 300;
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
    const { targets, notes } = await startTargets(dir, data, creds, progress, opts.workers);
    progress('one request to each target: a 2xx with the expected bytes');
    await checkAnswers(targets);
    await measure(targets, opts);
    await stopAll();

    // Each on a fresh gateway: after one upload alone (warmed, the figure that counts), then as started.
    const rssRuns = [];
    for (const warm of [true, false]) {
      progress(`RSS: 20 concurrent signed 1 MiB uploads${warm ? ', after one upload alone' : ''}`);
      const name = warm ? 'gateway-rss-warm' : 'gateway-rss';
      const gw = await startGateway(dir, name, writeConfig(data, name, creds));
      rssRuns.push(await rssCheck({ ...gw, creds }, data, { warm }));
      await stopChild(gw);
    }
    const [rssWarm, rss] = rssRuns;

    progress('micro-benchmarks');
    const micro = await microBenchmarks(creds, opts.microMs);

    const { flagged, goals } = summarize({ head, opts, targets, notes, rss, rssWarm, micro }, RESULTS);
    // Rate limits (issue 15): one decision with the memory store, added to the printout and the file.
    progress('rate limits: one decision with the memory store');
    const { rateLimitBenchmarks, rateLimitTable } = await import('./ratelimit.mjs');
    const rateLimits = rateLimitTable(rateLimitBenchmarks(opts.microMs));
    console.log(rateLimits.join('\n'));
    appendFileSync(RESULTS, `${rateLimits.join('\n')}\n`);
    keep = flagged.length > 0;
    missed = goals.filter((g) => g.goal !== undefined && (g.verdict === 'MISSED' || g.verdict === 'n/a'));
    if (flagged.length > 0) missed.push(...flagged);
  } finally {
    await stopAll();
    // The processes' output (the gateway's log lines among it) stays only when something went wrong.
    if (keep) process.stderr.write(`the targets' output is kept in ${dir}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
  if (opts.check && missed.length > 0) {
    process.stderr.write(`--check: ${missed.length} target(s) missed or not measured\n`);
    process.exitCode = 1;
  }
}

main().catch(async (err) => {
  process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
  await stopAll();
  process.exit(1);
});
