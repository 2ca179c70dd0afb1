/**
 * Reading `/metrics` in tests: the value of a metric summed over the series whose labels include the
 * given ones (so a test need not know every label, nor their order).
 */

/** The sum of `name`'s samples whose labels include `labels`; 0 when there is none. */
export function sampleSum(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const found = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => found.get(k) === v)) sum += Number(m[3]);
  }
  return sum;
}

/** `sampleSum` over a gateway's `/metrics`. */
export async function scrape(adminUrl: string, name: string, labels: Record<string, string> = {}) {
  return sampleSum(await (await fetch(`${adminUrl}/metrics`)).text(), name, labels);
}
