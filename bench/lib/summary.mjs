/**
 * The end of the bench: the CPU table with the runs side by side, the goals decided on the median
 * of the runs, the latency at a fixed load, the workers' shares, the RSS check and the
 * micro-benchmarks, printed to the terminal and written as markdown to bench/results.md.
 */
import { writeFileSync } from 'node:fs';
import { goalRows, latencyRows, median } from './goals.mjs';
import { loadNow, markdownTable, mib, textTable } from './report.mjs';

const fixed = (n, digits) => (Number.isFinite(n) ? n.toFixed(digits) : '—');

function uploadsLine(r) {
  const statuses = Object.entries(r.statuses).map(([s, n]) => `${s}×${n}`);
  return `20 uploads of ${(r.bytes / 1024 / 1024).toFixed(2)} MiB in ${r.wall} ms, statuses: ${statuses.join(' ')}`;
}

/** The CPU table: each run's lowest round side by side, their median, and every round. */
function cpuTable(rows, runs) {
  const columns = [
    'target',
    ...runs.map((_, i) => `run ${i + 1}`),
    'median µs/req',
    'of it kernel',
    'req/s',
    'every round, run by run',
    'failures',
  ];
  const body = rows.map((row) => {
    const results = runs.map((run) => run.get(row.id));
    if (results.every((r) => r === undefined))
      return [row.name, ...runs.map(() => '—'), '—', '—', '—', 'not measured', '—'];
    const failures = results.reduce((n, r) => n + (r?.failures ?? 0) + (r?.crashed ? 1 : 0), 0);
    return [
      failures > 0 ? `${row.name} !` : row.name,
      ...results.map((r) => fixed(r?.cpuUs, 1)),
      fixed(median(results.map((r) => r?.cpuUs ?? NaN)), 1),
      fixed(median(results.map((r) => r?.systemUs ?? NaN)), 1),
      fixed(median(results.map((r) => r?.rps ?? NaN)), 0),
      results.map((r) => (r?.rounds ?? []).map((us) => fixed(us, 0)).join(' ')).join(' / '),
      String(failures),
    ];
  });
  return { columns, body };
}

function goalTable(goals, runs) {
  const columns = ['goal', 'target', ...runs.map((_, i) => `run ${i + 1}`), 'median', 'spread', 'verdict'];
  const body = goals.map((g) => [
    g.path,
    g.target,
    ...g.figures.map((x) => (Number.isFinite(x) ? `${x.toFixed(2)}${g.unit}` : '—')),
    Number.isFinite(g.median) ? `**${g.median.toFixed(2)}${g.unit}**` : '—',
    Number.isFinite(g.spread) ? g.spread.toFixed(2) : '—',
    g.verdict,
  ]);
  return { columns, body };
}

function latencyTable(latency) {
  const columns = [
    'target',
    'offered req/s',
    'p50 ms',
    'p99 ms',
    'p99 / undici proxy',
    'CPU µs/req there',
    'verdict',
  ];
  const body = latency.map((l) => [
    l.name,
    fixed(l.rate, 0),
    fixed(l.p50, 2),
    fixed(l.p99, 2),
    fixed(l.ratio, 2),
    fixed(l.cpuUs, 1),
    l.verdict,
  ]);
  return { columns, body };
}

/**
 * The workers row's processes in each run's lowest round: the primary's CPU per request, and each
 * worker's share of the requests (of the bytes the workers wrote) and its CPU per request answered.
 */
function workerLines(rows, runs) {
  const lines = [];
  for (const row of rows.filter((r) => (r.gateway?.workers ?? 1) > 1)) {
    runs.forEach((run, i) => {
      const r = run.get(row.id);
      if (!r?.processes) return;
      const requests = r.runs.reduce((a, b) => (b.cpuUs < a.cpuUs ? b : a)).requests;
      const primary = r.processes.find((p) => p.pid === r.pgid) ?? r.processes[0];
      const workers = r.processes.filter((p) => p !== primary);
      const written = workers.reduce((n, p) => n + p.wchar, 0);
      const each = workers.map((w) => {
        const share = written > 0 ? w.wchar / written : NaN;
        const perRequest = share > 0 ? (w.cpu * 1e6) / (share * requests) : NaN;
        return `${(share * 100).toFixed(0)} % of the requests at ${fixed(perRequest, 1)} µs each`;
      });
      lines.push(
        `${row.name}, run ${i + 1}: ${fixed(r.cpuUs, 1)} µs/req in all; the primary ${fixed((primary.cpu * 1e6) / requests, 1)} µs/req; ` +
          `workers: ${each.join(', ')}`,
      );
    });
  }
  return lines;
}

/**
 * Prints everything and writes `file`. Returns the goals and latency rows (for `--check`) and the
 * lines flagging a target (errors, a wrong answer, a crash).
 */
export function summarize({ head, opts, rows, runs, notes, rss, rssWarm, micro, extra = [] }, file) {
  const flagged = [];
  runs.forEach((run, i) => {
    for (const row of rows) {
      const r = run.get(row.id);
      if (!r) continue;
      if (r.wrong) flagged.push(`! run ${i + 1}, ${row.name}: ${r.wrong}`);
      if (r.crashed) flagged.push(`! run ${i + 1}, ${row.name}: ${r.crashed}`);
      if (r.failures > 0 && !r.wrong) {
        const statuses = Object.entries(r.statuses).map(([c, n]) => `${c}×${n}`);
        flagged.push(`! run ${i + 1}, ${row.name}: ${r.failures} failed answers ${statuses.join(' ')}`);
      }
    }
  });
  const goals = goalRows(runs, rows);
  const latency = latencyRows(rows, runs);
  const cpu = cpuTable(rows, runs);
  const goal = goalTable(goals, runs);
  const lat = latencyTable(latency);
  const workers = workerLines(rows, runs);
  const rssLines = rss
    ? [
        `warmed process (after one upload alone): before ${mib(rssWarm.before)}, peak ${mib(rssWarm.peak)}, ` +
          `growth ${mib(rssWarm.growth)} (target ≤ 64 MiB), after ${mib(rssWarm.after)}; ${uploadsLine(rssWarm)}`,
        `fresh process: before ${mib(rss.before)}, peak ${mib(rss.peak)}, growth ${mib(rss.growth)}, ` +
          `after ${mib(rss.after)}; ${uploadsLine(rss)}`,
      ]
    : [];
  const microLines = (micro ?? []).map((m) =>
    m.unit ? `${m.name}: ${m.value}` : `${m.name}: ${Math.round(m.ops).toLocaleString('en-US')}/s`,
  );
  const method =
    `${runs.length} runs, each starting every target afresh in its own process group; per run: a warm-up of ` +
    `${opts.warmup} requests, then ${opts.rounds} rounds of ${opts.requests} requests over ${opts.connections} ` +
    `keep-alive connections (autocannon), the targets interleaved; CPU µs/req: the target's processes' own ` +
    `user+system time (/proc, all threads; a gateway with workers: the primary and every worker), the lowest ` +
    `round of each run; of it kernel: that round's system time; req/s: the mean of the rounds (wall clock); ` +
    `then every target at a fixed offered load of half the undici proxy's req/s in that run ` +
    `(${opts.latencySeconds} s) for p50/p99. Verdicts on the median of the runs' figures`;
  head.push(loadNow());

  const out = (line = '') => process.stdout.write(`${line}\n`);
  out(method);
  out();
  out(textTable(cpu.columns, cpu.body));
  [...notes, ...flagged].forEach((l) => out(l));
  out('\ngoals: the median over the runs decides');
  out(
    textTable(
      goal.columns,
      goal.body.map((r) => r.map((c) => String(c).replaceAll('**', ''))),
    ),
  );
  out('\nlatency at a fixed offered load (medians of the runs)');
  out(textTable(lat.columns, lat.body));
  if (workers.length > 0) out(`\nworkers\n${workers.join('\n')}`);
  if (rssLines.length > 0) {
    out('\nRSS of the gateway under 20 concurrent signed 1 MiB PATCH uploads');
    rssLines.forEach((l) => out(l));
  }
  if (microLines.length > 0) {
    out('\nmicro-benchmarks (in-process, one core)');
    microLines.forEach((l) => out(l));
  }
  out(`\n${head.at(-1)}`);

  const md = [
    '# Benchmark results',
    '',
    ...head.map((l) => `- ${l.replace(/^([\w ]+): (.*)$/, '$1: `$2`')}`),
    `- ${method}`,
    '',
    '## Server CPU per request, run by run',
    '',
    markdownTable(cpu.columns, cpu.body),
    '',
    ...[...notes, ...flagged].map((l) => `${l}  `),
    '',
    '## Goals (bench/rows.mjs), decided on the median of the runs',
    '',
    'A ratio is the peer\'s CPU per request over the row\'s (above 1: the row costs less); "spread" is the',
    "largest run's figure minus the smallest: the noise of this machine at this time.",
    '',
    markdownTable(goal.columns, goal.body),
    '',
    '## Latency at a fixed offered load (medians of the runs)',
    '',
    markdownTable(lat.columns, lat.body),
    '',
    ...(workers.length > 0 ? ['## Workers', '', ...workers.map((l) => `- ${l}`), ''] : []),
    ...(rssLines.length > 0
      ? ['## RSS under 20 concurrent signed 1 MiB uploads', '', ...rssLines.map((l) => `- ${l}`), '']
      : []),
    ...(microLines.length > 0
      ? ['## Micro-benchmarks (in-process, one core)', '', ...microLines.map((l) => `- ${l}`), '']
      : []),
    ...extra,
  ];
  writeFileSync(file, md.join('\n'));
  out('\nwritten: bench/results.md');
  return { flagged, goals, latency };
}
