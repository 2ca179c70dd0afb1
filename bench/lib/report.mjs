/**
 * The bench's output: the one table (aligned text for the terminal, markdown for bench/results.md
 * and the README's Performance section) and the header naming the machine, the date and the command.
 */
import { cpus, loadavg } from 'node:os';

/**
 * Machine, Node version, date and the exact command, for the top of the output; and the load
 * average at the start, since another busy process on the machine skews every figure.
 */
export function header(command) {
  const cores = cpus();
  const [load] = loadavg();
  return [
    `machine: ${cores[0]?.model ?? 'unknown CPU'} × ${cores.length} (${process.platform} ${process.arch})`,
    `node: ${process.version}`,
    `date: ${new Date().toISOString()}`,
    `command: ${command}`,
    `load average at start: ${load.toFixed(2)}${load > cores.length / 2 ? ' (busy machine: the figures are not reliable)' : ''}`,
  ];
}

const COLUMNS = ['target', 'req/s', 'p50 ms', 'p99 ms', '×bare', '×undici', 'errors'];

const fixed = (n, digits) => (Number.isFinite(n) ? n.toFixed(digits) : '—');
const ratio = (n, base) => (Number.isFinite(n) && base > 0 ? `${(n / base).toFixed(2)}×` : '—');

/**
 * The cells of each row. `rows`: {name, rps, p50, p99, failures, unavailable?}; a row with failures
 * is flagged with `!` so that a fast wrong answer never passes for a fast right one.
 */
function cells(rows) {
  const bare = rows.find((r) => r.role === 'bare')?.rps;
  const undici = rows.find((r) => r.role === 'undici')?.rps;
  return rows.map((r) => {
    if (r.unavailable) return [r.name, r.unavailable, '—', '—', '—', '—', '—'];
    return [
      r.failures > 0 ? `${r.name} !` : r.name,
      fixed(r.rps, 0),
      fixed(r.p50, 2),
      fixed(r.p99, 2),
      ratio(r.rps, bare),
      ratio(r.rps, undici),
      String(r.failures),
    ];
  });
}

/** The table as aligned plain text. */
export function textTable(rows) {
  const body = cells(rows);
  const widths = COLUMNS.map((c, i) => Math.max(c.length, ...body.map((row) => row[i].length)));
  const line = (row) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  return [line(COLUMNS), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** The table in markdown (numbers right-aligned). */
export function markdownTable(rows) {
  const body = cells(rows);
  const line = (row) => `| ${row.join(' | ')} |`;
  return [
    line(COLUMNS),
    `|---|${COLUMNS.slice(1)
      .map(() => '---:')
      .join('|')}|`,
    ...body.map(line),
  ].join('\n');
}

/** One line per flagged row: what went wrong, by status code and kind. */
export function failureNotes(rows) {
  return rows
    .filter((r) => !r.unavailable && r.failures > 0)
    .map((r) => {
      const statuses = Object.entries(r.statuses ?? {}).map(([code, n]) => `${code}×${n}`);
      const parts = [
        statuses.length > 0 ? `non-2xx ${statuses.join(' ')}` : '',
        r.errors > 0 ? `connection errors ${r.errors}` : '',
        r.timeouts > 0 ? `timeouts ${r.timeouts}` : '',
      ].filter(Boolean);
      return `! ${r.name}: ${parts.join(', ')}`;
    });
}

/** `12.3 MiB`. */
export function mib(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
