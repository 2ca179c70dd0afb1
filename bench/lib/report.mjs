/**
 * The bench's output: the header naming the machine, the date and the command, and tables (aligned
 * text for the terminal, markdown for bench/results.md and docs/performance.md).
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

/** The load average now, for the end of the output. */
export function loadNow() {
  return `load average at end: ${loadavg()[0].toFixed(2)}`;
}

/** `12.3 MiB`. */
export function mib(bytes) {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
