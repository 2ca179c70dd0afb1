/**
 * Driving a target with autocannon (programmatic): a fixed number of keep-alive requests over a fixed
 * number of connections (as fast as it answers, or at a fixed offered rate), every answer checked (a
 * 2xx, and the expected bytes where they are known), and the target's own CPU time read from /proc
 * before and after, per process of its group. Latency percentiles are computed over every response
 * time autocannon reports (fractional ms), not its integer-ms histogram; req/s is the requests over
 * the wall time of the run.
 */
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { groupProcesses } from './cpu.mjs';

/** The p-th percentile (0–100, nearest rank) of `sorted`. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Per process of the group: CPU seconds and bytes written between `before` and `after`. */
function deltas(before, after) {
  const out = [];
  for (const [pid, a] of after) {
    const b = before.get(pid) ?? { user: 0, system: 0, wchar: 0 };
    out.push({
      pid,
      cpu: a.user - b.user + a.system - b.system,
      system: a.system - b.system,
      wchar: a.wchar - b.wchar,
    });
  }
  return out;
}

/**
 * One run of `amount` requests against `target` ({url, method, body, headerSets, expect, pgid}) on
 * `connections` connections, at `rate` req/s when given. Several header sets (identities) are taken
 * in turn by each connection. Resolves with the target's CPU µs per request (and its kernel part),
 * req/s, p50/p99 in ms, each process's share, and the failures: non-2xx by status, bodies unlike
 * `expect`, connection errors, timeouts.
 */
export function drive(target, { connections, amount, rate }) {
  return new Promise((resolve, reject) => {
    const latencies = [];
    const before = groupProcesses(target.pgid);
    const started = performance.now();
    const method = target.method ?? 'GET';
    const sets = target.headerSets ?? [target.headers ?? {}];
    // autocannon checks bodies only for one request shape; with several, each answer is checked here.
    const expected = target.expect?.toString('utf8');
    let wrongBodies = 0;
    const onResponse = expected
      ? (status, body) => {
          if (status >= 200 && status < 300 && body !== expected) wrongBodies++;
        }
      : undefined;
    const instance = autocannon(
      {
        url: target.url,
        method,
        ...(sets.length === 1
          ? { headers: sets[0] }
          : {
              requests: sets.map((headers) => ({
                method,
                headers,
                ...(target.body && { body: target.body }),
                ...(onResponse && { onResponse }),
              })),
            }),
        ...(target.body && { body: target.body }),
        connections,
        amount,
        timeout: 10,
        ...(rate ? { overallRate: rate } : {}),
        ...(expected && sets.length === 1 ? { expectBody: expected } : {}),
      },
      (err, result) => {
        if (err) return reject(err);
        const wall = (performance.now() - started) / 1000;
        const processes = deltas(before, groupProcesses(target.pgid));
        const cpu = processes.reduce((n, p) => n + p.cpu, 0);
        const system = processes.reduce((n, p) => n + p.system, 0);
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
          rps: answered / wall,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          processes,
          non2xx: result.non2xx,
          mismatches: (result.mismatches ?? 0) + wrongBodies,
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
