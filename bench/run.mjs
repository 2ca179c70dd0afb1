#!/usr/bin/env node
/**
 * The side-by-side benchmark (`npm run bench`, never part of `npm test`): every target in its own
 * process on loopback, driven by autocannon at the same connections and duration, targets
 * alternating round after round; then latency at half load, the RSS of concurrent 1 MiB uploads,
 * and in-process micro-benchmarks of the credential checks. Prints one table and writes it, with
 * the rest, to bench/results.md.
 *
 *   npm run bench [-- --quick]      env: BENCH_DURATION (s per run), BENCH_CONNECTIONS, BENCH_ROUNDS
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { copySampleData, createCredentials, startGateway, writeConfig } from './lib/gateway.mjs';
import { drive, drivePaced, failuresOf } from './lib/load.mjs';
import { microBenchmarks } from './lib/micro.mjs';
import { hasExited, installCleanup, stopAll, stopChild } from './lib/processes.mjs';
import { header } from './lib/report.mjs';
import { rssCheck } from './lib/rss.mjs';
import { checkAnswers, startTargets } from './lib/setup.mjs';
import { summarize } from './lib/summary.mjs';

const RESULTS = new URL('./results.md', import.meta.url).pathname;

function options(argv, env) {
  const flags = argv.filter((a) => a !== '--quick');
  if (flags.length > 0) throw new Error(`unknown argument ${flags[0]} (usage: npm run bench [-- --quick])`);
  const quick = argv.includes('--quick');
  const num = (name, fallback) => {
    if (env[name] === undefined || env[name] === '') return fallback;
    const n = Number(env[name]);
    if (!(n > 0)) throw new Error(`${name} must be a positive number`);
    return n;
  };
  return {
    quick,
    duration: num('BENCH_DURATION', quick ? 1 : 5),
    connections: Math.round(num('BENCH_CONNECTIONS', 50)),
    rounds: Math.round(num('BENCH_ROUNDS', quick ? 1 : 2)),
    warmup: quick ? 0.25 : 1,
    microMs: quick ? 250 : 1000,
  };
}

function commandLine(argv, env) {
  const vars = ['BENCH_DURATION', 'BENCH_CONNECTIONS', 'BENCH_ROUNDS']
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
  const live = targets.filter((t) => !t.unavailable);
  progress(`warm-up: ${opts.warmup} s per target`);
  for (const t of live) {
    t.runs = [];
    await drive(t, { connections: opts.connections, duration: opts.warmup });
  }
  for (let round = 0; round < opts.rounds; round++) {
    const order = live.map((_, i) => live[(i + round) % live.length]);
    for (const t of order) {
      if (t.crashed) continue;
      progress(`round ${round + 1}/${opts.rounds}: ${t.name}`);
      t.runs.push(await drive(t, { connections: opts.connections, duration: opts.duration }));
      if (hasExited(t.proc)) t.crashed = `${t.proc.name} exited during the run (see its .err file)`;
    }
  }
  for (const t of live) {
    const runs = t.runs;
    t.rps = mean(runs.map((r) => r.rps));
    t.p50 = mean(runs.map((r) => r.p50));
    t.p99 = mean(runs.map((r) => r.p99));
    t.errors = runs.reduce((n, r) => n + r.errors, 0);
    t.timeouts = runs.reduce((n, r) => n + r.timeouts, 0);
    t.failures = runs.reduce((n, r) => n + failuresOf(r), 0) + (t.wrong || t.crashed ? 1 : 0);
    t.statuses = {};
    for (const r of runs)
      for (const [c, n] of Object.entries(r.statuses)) t.statuses[c] = (t.statuses[c] ?? 0) + n;
  }
}

/** p99 of the bare server and of the gateway (upstream, signed) at half of each one's own peak. */
async function halfLoad(targets, opts) {
  const rows = [];
  for (const role of ['bare', 'gw-upstream']) {
    const t = targets.find((x) => x.role === role);
    const rate = t.rps / 2;
    progress(`half load: ${t.name} at ${rate.toFixed(0)} req/s`);
    const cannon = await drive(t, {
      connections: opts.connections,
      duration: opts.duration,
      overallRate: rate,
    });
    const paced = await drivePaced(t, { connections: opts.connections, duration: opts.duration, rate });
    rows.push({ name: t.name, rate, cannon, paced });
  }
  return rows;
}

async function main() {
  const argv = process.argv.slice(2);
  const opts = options(argv, process.env);
  // Bounded in time whatever happens: twice the planned time of 12 targets, plus starts and checks.
  const budget = 2 * ((opts.warmup + opts.duration * opts.rounds) * 12 + opts.duration * 4) + 120;
  setTimeout(() => {
    process.stderr.write(`the bench ran past ${budget.toFixed(0)} s: stopping\n`);
    stopAll().finally(() => process.exit(1));
  }, budget * 1000).unref();

  const head = header(commandLine(argv, process.env));
  for (const line of head) console.log(line);
  console.log(
    `load: autocannon, ${opts.connections} connections, ${opts.duration} s per run, ${opts.rounds} round(s), ${opts.warmup} s warm-up per target\n`,
  );

  const dir = mkdtempSync(join(tmpdir(), 'bh-bench-'));
  installCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const data = join(dir, 'data');
  copySampleData(data);
  const creds = createCredentials();
  let keep = true;
  try {
    const { targets, notes } = await startTargets(dir, data, creds, progress);
    progress('one request to each target: a 2xx with the expected bytes');
    await checkAnswers(targets);
    await measure(targets, opts);
    const half = await halfLoad(targets, opts);
    await stopAll();

    // Each on a fresh gateway: first as started, then after one upload alone.
    const rssRuns = [];
    for (const warm of [false, true]) {
      progress(`RSS: 20 concurrent signed 1 MiB uploads${warm ? ', after one upload alone' : ''}`);
      const name = warm ? 'gateway-rss-warm' : 'gateway-rss';
      const gw = await startGateway(dir, name, writeConfig(data, name, creds));
      rssRuns.push(await rssCheck({ ...gw, creds }, data, { warm }));
      await stopChild(gw);
    }
    const [rss, rssWarm] = rssRuns;

    progress('micro-benchmarks');
    const micro = await microBenchmarks(creds, opts.microMs);

    const flagged = summarize({ head, opts, targets, notes, half, rss, rssWarm, micro }, RESULTS);
    keep = flagged.length > 0;
  } finally {
    await stopAll();
    // The processes' output (the gateway's log lines among it) stays only when something went wrong.
    if (keep) process.stderr.write(`the targets' output is kept in ${dir}\n`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

main().catch(async (err) => {
  process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
  await stopAll();
  process.exit(1);
});
