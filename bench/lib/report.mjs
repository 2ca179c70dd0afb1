/**
 * The bench's output: the header naming the machine, the date and the command, and the CPU table
 * (aligned text for the terminal, markdown for bench/results.md and docs/performance.md).
 */
import { cpus, loadavg } from 'node:os';

/**
 * Machine, Node version, date and the exact command, for the top of the output; and the load
 * average at the start (req/s suffers from a busy machine; CPU per request much less).
 */
export function header(command) {
  const cores = cpus();
  const [load] = loadavg();
  return [
    `machine: ${cores[0]?.model ?? 'unknown CPU'} × ${cores.length} (${process.platform} ${process.arch})`,
    `node: ${process.version}`,
    `date: ${new Date().toISOString()}`,
    `command: ${command}`,
    `load average at start: ${load.toFixed(2)}`,
  ];
}

const COLUMNS = [
  'target',
  'CPU µs/req',
  'of it kernel',
  'every round',
  'req/s',
  'p50 ms',
  'p99 ms',
  'requests',
  'failures',
];

const fixed = (n, digits) => (Number.isFinite(n) ? n.toFixed(digits) : '—');

/** The cells of each row; a row with failures is flagged `!` (a fast wrong answer is no answer). */
function cells(rows) {
  return rows.map((r) => {
    if (r.unavailable) return [r.name, r.unavailable, '—', '—', '—', '—', '—', '—', '—'];
    return [
      r.failures > 0 ? `${r.name} !` : r.name,
      fixed(r.cpuUs, 1),
      fixed(r.systemUs, 1),
      // Each round's CPU µs/req in the order run: how far a disturbed round sits from the calm ones.
      (r.rounds ?? []).map((us) => fixed(us, 0)).join(' '),
      fixed(r.rps, 0),
      fixed(r.p50, 2),
      fixed(r.p99, 2),
      String(r.requests),
      String(r.failures),
    ];
  });
}

/** Rows as aligned plain text. */
export function textTable(columns, body) {
  const widths = columns.map((c, i) => Math.max(c.length, ...body.map((row) => String(row[i]).length)));
  const line = (row) =>
    row
      .map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i])))
      .join('  ');
  return [line(columns), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** Rows in markdown (numbers right-aligned). */
export function markdownTable(columns, body) {
  const line = (row) => `| ${row.join(' | ')} |`;
  return [
    line(columns),
    `|---|${columns
      .slice(1)
      .map(() => '---:')
      .join('|')}|`,
    ...body.map(line),
  ].join('\n');
}

/** The CPU table of every target. */
export function targetTable(rows, markdown) {
  return (markdown ? markdownTable : textTable)(COLUMNS, cells(rows));
}

/** One line per flagged row: what went wrong, by status code and kind. */
export function failureNotes(rows) {
  return rows
    .filter((r) => !r.unavailable && r.failures > 0)
    .map((r) => {
      const statuses = Object.entries(r.statuses ?? {}).map(([code, n]) => `${code}×${n}`);
      const parts = [
        statuses.length > 0 ? `non-2xx ${statuses.join(' ')}` : '',
        r.mismatches > 0 ? `wrong bodies ${r.mismatches}` : '',
        r.errors > 0 ? `connection errors ${r.errors}` : '',
        r.timeouts > 0 ? `timeouts ${r.timeouts}` : '',
      ].filter(Boolean);
      return `! ${r.name}: ${parts.join(', ')}`;
    });
}

/** The load average now, for the end of the output. */
export function loadNow() {
  return `load average at end: ${loadavg()[0].toFixed(2)}`;
}

/** `12.3 MiB`. */
export function mib(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
