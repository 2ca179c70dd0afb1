/**
 * The end of a run: the one table, then latency at half load, the RSS check, the micro-benchmarks
 * and the issue's targets, printed to the terminal and written as markdown to bench/results.md
 * (what the README's Performance section is pasted from).
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { failuresOf } from './load.mjs';
import { failureNotes, markdownTable, mib, textTable } from './report.mjs';
import { targetLines } from './targets-met.mjs';

const signed = (n) => `${n >= 0 ? '+' : ''}${n.toFixed(2)} ms`;

function uploadsLine(r) {
  const statuses = Object.entries(r.statuses).map(([s, n]) => `${s}×${n}`);
  return `20 uploads of ${(r.bytes / 1024 / 1024).toFixed(2)} MiB in ${r.wall} ms, statuses: ${statuses.join(' ')}`;
}

/** Beyond this (ms), the load process's own event-loop delay blurs a difference the goal sets at 1 ms. */
const MAX_LAG = 1;

/**
 * Why a half-load run cannot be compared, or undefined: it completed under 90 % of the rate asked,
 * or the load process lagged (its latencies are then its own queue, not the target's).
 */
function unheld(run, rate) {
  if (run.rps < 0.9 * rate) return 'rate not held';
  if (run.lagP99 > MAX_LAG) return `load process lagged`;
  return undefined;
}

function halfSection(half) {
  const [bare, gw] = half;
  const diff = (kind) =>
    unheld(bare[kind], bare.rate) || unheld(gw[kind], gw.rate) ? NaN : gw[kind].p99 - bare[kind].p99;
  const diffCannon = diff('cannon');
  const diffPaced = diff('paced');
  const shown = (n) => (Number.isNaN(n) ? 'not measured' : signed(n));
  const note = (run, rate) => (unheld(run, rate) ? ` (${unheld(run, rate)})` : '');
  const cells = (run, rate, p50) =>
    [
      run.rps.toFixed(0) + note(run, rate),
      ...(p50 ? [run.p50.toFixed(2)] : []),
      run.p99.toFixed(2),
      run.lagP99.toFixed(2),
    ].join(' | ');
  const lines = [
    '| target | rate asked req/s | autocannon overallRate: req/s | p99 ms | load lag p99 ms | paced: req/s | p50 ms | p99 ms | load lag p99 ms | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...half.map(
      (h) =>
        `| ${h.name} | ${h.rate.toFixed(0)} | ${cells(h.cannon, h.rate, false)} | ${cells(h.paced, h.rate, true)} | ` +
        `${failuresOf(h.cannon) + failuresOf(h.paced)} |`,
    ),
    '',
    `gateway p99 − bare p99: ${shown(diffCannon)} (autocannon overallRate), ${shown(diffPaced)} (paced); ` +
      'target ≤ +1 ms.',
    'Each target runs at half of its own peak from the table. autocannon overallRate lets each connection',
    'send its per-second share back to back at the start of every second (bursts at full concurrency); the paced',
    'driver (undici, open loop, in the load process) spreads the same rate evenly, a batch every 1 ms, and',
    'counts a wait for a free connection in the latency. "load lag" is the load process\'s own event-loop delay:',
    `no difference is computed from a run that completed under 90 % of the rate asked or whose load lag p99`,
    `exceeded ${MAX_LAG} ms (a busy machine), since its latencies are then the load process's queue.`,
  ];
  return { lines, diffCannon, diffPaced };
}

/**
 * Prints everything and writes `file`; returns the lines flagging a target (errors, a wrong answer,
 * a crash), empty when every answer was right.
 */
export function summarize({ head, opts, targets, notes, half, rss, rssWarm, micro }, file) {
  const flagged = [
    ...failureNotes(targets),
    ...targets.filter((t) => t.wrong).map((t) => `! ${t.name}: ${t.wrong}`),
    ...targets.filter((t) => t.crashed).map((t) => `! ${t.name}: ${t.crashed}`),
  ];
  const { lines: halfLines, diffCannon, diffPaced } = halfSection(half);
  const sections = {
    notes: [...notes, ...flagged],
    rss: [
      `fresh process: before ${mib(rss.before)}, peak ${mib(rss.peak)}, growth ${mib(rss.growth)} ` +
        `(target ≤ 64 MiB), after ${mib(rss.after)}; ${uploadsLine(rss)}`,
      `after one upload alone: before ${mib(rssWarm.before)}, peak ${mib(rssWarm.peak)}, ` +
        `growth ${mib(rssWarm.growth)}, after ${mib(rssWarm.after)}; ${uploadsLine(rssWarm)}`,
    ],
    micro: micro.map((m) => `${m.name}: ${Math.round(m.ops).toLocaleString('en-US')}/s`),
    targets: targetLines(targets, { diffCannon, diffPaced, rss, rssWarm }),
  };
  head.push(`load average at end: ${loadavg()[0].toFixed(2)}`);

  const out = (line = '') => process.stdout.write(`${line}\n`);
  out(textTable(targets));
  sections.notes.forEach((l) => out(l));
  out('\nlatency at half load');
  halfLines.forEach((l) => out(l));
  out('\nRSS of the gateway (local sso_providers store) under 20 concurrent signed 1 MiB PATCH uploads');
  sections.rss.forEach((l) => out(l));
  out('\nmicro-benchmarks (in-process, one core)');
  sections.micro.forEach((l) => out(l));
  out('\ntargets of issue 5');
  sections.targets.forEach((l) => out(l));
  out(`\n${head.at(-1)}`);

  const md = [
    '# Benchmark results',
    '',
    ...head.map((l) => `- ${l.replace(/^(\w+): (.*)$/, '$1: `$2`')}`),
    `- load: autocannon, ${opts.connections} connections, ${opts.duration} s per run, ` +
      `${opts.rounds} round(s) averaged, targets alternating; latency percentiles over every response`,
    '',
    markdownTable(targets),
    '',
    ...sections.notes.map((l) => `${l}  `),
    '',
    '## Latency at half load',
    '',
    ...halfLines,
    '',
    '## RSS under 20 concurrent signed 1 MiB uploads',
    '',
    ...sections.rss.map((l) => `- ${l}`),
    '',
    '## Micro-benchmarks (in-process, one core)',
    '',
    ...sections.micro.map((l) => `- ${l}`),
    '',
    '## Targets of issue 5',
    '',
    ...sections.targets.map((l) => `- ${l}`),
    '',
  ];
  writeFileSync(file, md.join('\n'));
  out('\nwritten: bench/results.md');
  return flagged;
}
