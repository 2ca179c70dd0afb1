/**
 * The admin listener: `/metrics` (Prometheus text), `/livez` (the process is up) and `/readyz`
 * (configuration loaded, backends usable, not draining). Kept off the API port so that it is never
 * exposed with the API.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { type Check, checkText } from './checks.js';

/** What `/metrics` serves: the app's registry, or (cluster primary) one aggregating the workers'. */
export interface MetricsSource {
  readonly registry: Pick<Registry, 'metrics' | 'contentType'>;
}

/**
 * The `request` listener of the admin server; `ready()` says whether the gateway takes traffic (a
 * promise when the answer comes from the cluster's workers; a rejection is "not ready"), and
 * `checks()`, when given, says which part is ready by name (see `Check`).
 */
export function createAdminHandler(
  metrics: MetricsSource,
  ready: () => boolean | Promise<boolean>,
  checks?: () => Record<string, Check>,
) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, { status: 'method not allowed' });
    } else if (path === '/livez') {
      send(res, 200, { status: 'ok' });
    } else if (path === '/readyz') {
      Promise.resolve()
        .then(ready)
        .catch(() => false)
        .then((ok) =>
          send(res, ok ? 200 : 503, {
            status: ok ? 'ready' : 'not ready',
            // Which part is not ready: each upstream, database and key source by name.
            ...(checks
              ? {
                  checks: Object.fromEntries(Object.entries(checks()).map(([k, v]) => [k, checkText(v)])),
                }
              : {}),
          }),
        );
    } else if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'Content-Type': metrics.registry.contentType });
          res.end(req.method === 'HEAD' ? undefined : text);
        },
        () => send(res, 500, { status: 'metrics unavailable' }),
      );
    } else {
      send(res, 404, { status: 'not found' });
    }
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}
