/**
 * The end of a run: the CPU table, the issue's ratios, the workers line, the RSS check and the
 * micro-benchmarks, printed to the terminal and written as markdown to bench/results.md (what the
 * docs/performance.md quotes).
 */
import { writeFileSync } from 'node:fs';
import { GOAL_COLUMNS, goalCells, goalRows } from './goals.mjs';
import { failureNotes, loadNow, markdownTable, mib, targetTable, textTable } from './report.mjs';

function uploadsLine(r) {
  const statuses = Object.entries(r.statuses).map(([s, n]) => `${s}×${n}`);
  return `20 uploads of ${(r.bytes / 1024 / 1024).toFixed(2)} MiB in ${r.wall} ms, statuses: ${statuses.join(' ')}`;
}

/** The line comparing the workers target (primary included) with one process, both through the upstream. */
function workersLine(targets, count) {
  const one = targets.find((t) => t.role === 'gw-upstream');
  const many = targets.find((t) => t.role === 'gw-workers');
  if (!one || !many || many.unavailable) return `server.workers: ${count}: not measured`;
  return (
    `server.workers: ${count} (the primary and every worker counted): ${many.cpuUs.toFixed(1)} µs/req, ` +
    `${many.rps.toFixed(0)} req/s; one process: ${one.cpuUs.toFixed(1)} µs/req, ${one.rps.toFixed(0)} req/s ` +
    `(×${(many.cpuUs / one.cpuUs).toFixed(2)} CPU per request)`
  );
}

/**
 * Prints everything and writes `file`. Returns the lines flagging a target (errors, a wrong answer,
 * a crash) and the goal rows.
 */
export function summarize({ head, opts, targets, notes, rss, rssWarm, micro }, file) {
  const flagged = [
    ...failureNotes(targets),
    ...targets.filter((t) => t.wrong).map((t) => `! ${t.name}: ${t.wrong}`),
    ...targets.filter((t) => t.crashed).map((t) => `! ${t.name}: ${t.crashed}`),
  ];
  const goals = goalRows(targets);
  const rssLines = [
    `warmed process (after one upload alone): before ${mib(rssWarm.before)}, peak ${mib(rssWarm.peak)}, ` +
      `growth ${mib(rssWarm.growth)} (target ≤ 64 MiB), after ${mib(rssWarm.after)}; ${uploadsLine(rssWarm)}`,
    `fresh process: before ${mib(rss.before)}, peak ${mib(rss.peak)}, growth ${mib(rss.growth)}, ` +
      `after ${mib(rss.after)}; ${uploadsLine(rss)}`,
  ];
  const microLines = micro.map((m) =>
    m.unit ? `${m.name}: ${m.value}` : `${m.name}: ${Math.round(m.ops).toLocaleString('en-US')}/s`,
  );
  const method =
    `load: autocannon, ${opts.connections} keep-alive connections, ${opts.requests} requests per run, ` +
    `${opts.rounds} rounds (targets alternating, after a warm-up of ${opts.warmup} requests each); ` +
    `CPU µs/req: the target's processes' own user+system time (/proc, all threads; a gateway with ` +
    `workers: the primary and every worker), the lowest of the rounds; of it kernel: that round's system ` +
    `time (socket reads and writes, the log file); every round: each round's CPU µs/req in the order run; ` +
    `req/s and latency: the mean of the rounds`;
  head.push(loadNow());

  const out = (line = '') => process.stdout.write(`${line}\n`);
  out(method);
  out();
  out(targetTable(targets, false));
  [...notes, ...flagged].forEach((l) => out(l));
  out('\nserver CPU per request, peer / gateway');
  out(textTable(GOAL_COLUMNS, goalCells(goals)));
  out(workersLine(targets, opts.workers));
  out('\nRSS of the gateway under 20 concurrent signed 1 MiB PATCH uploads');
  rssLines.forEach((l) => out(l));
  out('\nmicro-benchmarks (in-process, one core)');
  microLines.forEach((l) => out(l));
  out(`\n${head.at(-1)}`);

  const md = [
    '# Benchmark results',
    '',
    ...head.map((l) => `- ${l.replace(/^([\w ]+): (.*)$/, '$1: `$2`')}`),
    `- ${method}`,
    '',
    targetTable(targets, true),
    '',
    ...[...notes, ...flagged].map((l) => `${l}  `),
    '',
    '## Server CPU per request: peer / gateway (issue 13)',
    '',
    'Above 1 the gateway costs less CPU per request than the peer; a ratio within 10 % of its target counts as met.',
    '',
    markdownTable(GOAL_COLUMNS, goalCells(goals)),
    '',
    `- ${workersLine(targets, opts.workers)}`,
    '',
    '## RSS under 20 concurrent signed 1 MiB uploads',
    '',
    ...rssLines.map((l) => `- ${l}`),
    '',
    '## Micro-benchmarks (in-process, one core)',
    '',
    ...microLines.map((l) => `- ${l}`),
    '',
  ];
  writeFileSync(file, md.join('\n'));
  out('\nwritten: bench/results.md');
  return { flagged, goals };
}
