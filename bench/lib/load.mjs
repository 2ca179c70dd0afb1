/**
 * Driving a target with autocannon (programmatic): a fixed number of keep-alive requests over a fixed
 * number of connections, every answer checked (a 2xx, and the expected bytes where they are known),
 * and the target's own CPU time read from /proc before and after. Latency percentiles are computed
 * over every response time autocannon reports (fractional ms), not its integer-ms histogram.
 */
import autocannon from 'autocannon';
import { groupCpuTimes } from './cpu.mjs';

/** The p-th percentile (0–100, nearest rank) of `sorted`. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/**
 * One run of `amount` requests against `target` ({url, headers, expect, pgid, rate}) on `connections`
 * connections. Resolves with the target's CPU µs per request, req/s, p50/p99 in ms, and the
 * failures: non-2xx by status, bodies unlike `expect`, connection errors, timeouts.
 */
export function drive(target, { connections, amount }) {
  return new Promise((resolve, reject) => {
    const latencies = [];
    const before = groupCpuTimes(target.pgid);
    const instance = autocannon(
      {
        url: target.url,
        method: target.method ?? 'GET',
        headers: target.headers ?? {},
        connections,
        amount,
        timeout: 10,
        ...(target.rate ? { overallRate: target.rate } : {}),
        ...(target.expect ? { expectBody: target.expect.toString('utf8') } : {}),
      },
      (err, result) => {
        if (err) return reject(err);
        const after = groupCpuTimes(target.pgid);
        const system = after.system - before.system;
        const cpu = after.user - before.user + system;
        const statuses = {};
        for (const [code, { count }] of Object.entries(result.statusCodeStats)) {
          if (!code.startsWith('2')) statuses[code] = count;
        }
        const sorted = Float64Array.from(latencies).sort();
        const answered = result.requests.total;
        resolve({
          requests: answered,
          cpuUs: answered > 0 ? (cpu * 1e6) / answered : NaN,
          systemUs: answered > 0 ? (system * 1e6) / answered : NaN,
          rps: answered / result.duration,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          non2xx: result.non2xx,
          mismatches: result.mismatches ?? 0,
          errors: result.errors,
          timeouts: result.timeouts,
          statuses,
        });
      },
    );
    instance.on('response', (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  });
}

/** Every answer that was not what the target should answer: non-2xx, wrong bytes, errors, timeouts. */
export function failuresOf(run) {
  return run.non2xx + run.mismatches + run.errors + run.timeouts;
}
