/**
 * Driving a target: autocannon (programmatic) for throughput and for autocannon's own rate limit,
 * plus a paced driver for "latency at a given load". Latency percentiles are computed here over
 * every response time autocannon reports (fractional ms), not from its integer-ms histogram, so
 * that sub-millisecond differences between targets are visible.
 */
import autocannon from 'autocannon';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Pool } from 'undici';

/**
 * The p99 lateness (ms) of the load process's event loop: the histogram records the time between
 * ticks of a 1 ms timer, so the 1 ms itself is taken off.
 */
function lagOf(histogram) {
  return Math.max(0, histogram.percentile(99) / 1e6 - 1);
}

/** The p-th percentile (0–100, nearest rank) of `sorted`. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

function summary(latencies, requests, seconds, failures) {
  const sorted = Float64Array.from(latencies).sort();
  return {
    rps: requests / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    count: requests,
    ...failures,
  };
}

/**
 * One autocannon run against `target` ({url, headers}); `overallRate` limits the rate (autocannon
 * hands each connection its share per second). Resolves with req/s (completed responses / seconds),
 * p50/p99 in ms, and the failures: non-2xx by status, connection errors, timeouts.
 */
export function drive(target, { connections, duration, overallRate }) {
  const lag = monitorEventLoopDelay({ resolution: 1 });
  lag.enable();
  return new Promise((resolve, reject) => {
    const latencies = [];
    const instance = autocannon(
      {
        url: target.url,
        method: target.method ?? 'GET',
        headers: target.headers ?? {},
        connections,
        duration,
        ...(overallRate ? { overallRate: Math.max(1, Math.round(overallRate)) } : {}),
        timeout: 10,
        // autocannon stops only at a sample tick: at its default (1 s), a 0.25 s run lasts 1 s.
        sampleInt: 100,
      },
      (err, result) => {
        lag.disable();
        if (err) return reject(err);
        const statuses = {};
        for (const [code, { count }] of Object.entries(result.statusCodeStats)) {
          if (!code.startsWith('2')) statuses[code] = count;
        }
        resolve({
          ...summary(latencies, result.requests.total, result.duration, {
            non2xx: result.non2xx,
            errors: result.errors,
            timeouts: result.timeouts,
            statuses,
          }),
          lagP99: lagOf(lag),
        });
      },
    );
    instance.on('response', (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  });
}

/**
 * An open-loop paced run: `rate` requests per second spread evenly (a batch every millisecond),
 * over `connections` keep-alive connections of an undici Pool; a request that finds every
 * connection busy waits, and that wait counts in its latency (no coordinated omission). Requests go
 * through undici's low-level `dispatch` (no promise or stream per request), so that the driver
 * itself costs as little as it can.
 */
export async function drivePaced(target, { connections, duration, rate }) {
  const url = new URL(target.url);
  const pool = new Pool(url.origin, { connections });
  const latencies = [];
  const failures = { non2xx: 0, errors: 0, timeouts: 0, statuses: {} };
  const request = { method: 'GET', path: url.pathname + url.search, headers: target.headers ?? {} };
  let pending = 0;
  let drained;
  const settle = () => {
    pending -= 1;
    if (pending === 0 && drained) drained();
  };
  const fire = () => {
    const t0 = performance.now();
    let status = 0;
    pending += 1;
    pool.dispatch(request, {
      onConnect() {},
      onHeaders(statusCode) {
        status = statusCode;
        return true;
      },
      onData() {
        return true;
      },
      onComplete() {
        latencies.push(performance.now() - t0);
        if (status < 200 || status > 299) {
          failures.non2xx += 1;
          failures.statuses[status] = (failures.statuses[status] ?? 0) + 1;
        }
        settle();
      },
      onError() {
        failures.errors += 1;
        settle();
      },
    });
  };
  // The driver's own lateness: when its event loop lags, its latencies are its own queue.
  const lag = monitorEventLoopDelay({ resolution: 1 });
  lag.enable();
  const start = performance.now();
  let sent = 0;
  await new Promise((resolve) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - start;
      const due = Math.min(Math.floor((elapsed * rate) / 1000), Math.floor(duration * rate));
      while (sent < due) {
        fire();
        sent += 1;
      }
      if (elapsed >= duration * 1000) {
        clearInterval(timer);
        resolve();
      }
    }, 1);
  });
  if (pending > 0) await new Promise((resolve) => (drained = resolve));
  const seconds = (performance.now() - start) / 1000;
  lag.disable();
  await pool.close();
  return { ...summary(latencies, latencies.length, seconds, failures), lagP99: lagOf(lag) };
}

/** Non-2xx + connection errors + timeouts of a run. */
export function failuresOf(run) {
  return run.non2xx + run.errors + run.timeouts;
}
