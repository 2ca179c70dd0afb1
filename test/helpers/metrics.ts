/**
 * Reading `/metrics` in tests: the Prometheus text format parsed into samples, so that a test names a
 * metric and the labels it cares about, never a line's spelling or the order of its labels.
 */

/** One sample line: `name{labels} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;
const ESCAPE: Record<string, string> = { n: '\n', '\\': '\\', '"': '"' };

/** A sample line's label set, escapes undone; throws on a malformed one. */
function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const m = LABEL.exec(text);
    if (m === null) throw new Error(`malformed labels in the metrics line ${JSON.stringify(line)}`);
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => ESCAPE[c] ?? `\\${c}`);
  }
  return labels;
}

/** Every sample of a Prometheus text page, in order (comments and blank lines skipped). */
export function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (m === null) throw new Error(`not a metrics sample: ${JSON.stringify(line)}`);
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    out.push({ name: m[1]!, labels: parseLabels(m[2] ?? '', line), value });
  }
  return out;
}

/** The samples named `name` whose labels include `labels`. */
export function series(text: string, name: string, labels: Record<string, string> = {}): Sample[] {
  return samples(text).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

/**
 * The value of `name` summed over its samples whose labels include `labels` (so a test need not know
 * every label); undefined when no sample matches, so that "exported at 0" is told from "absent".
 */
export function metric(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = series(text, name, labels);
  return found.length === 0 ? undefined : found.reduce((sum, s) => sum + s.value, 0);
}

/** The text of a gateway's `/metrics` (plain HTTP; an HTTPS admin listener is read by its caller). */
export async function metricsText(adminUrl: string): Promise<string> {
  const res = await fetch(`${adminUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return res.text();
}

/** `metric` over a gateway's `/metrics`. */
export async function scrape(
  adminUrl: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  return metric(await metricsText(adminUrl), name, labels);
}
