/**
 * Whether an upstream can be reached, for `/readyz`: a TCP connect at start and every few seconds,
 * corrected by what real requests find. Transitions are logged once, not on every probe.
 */
import { connect } from 'node:net';
import type { Logger } from '../observability/logger.js';

/** How often an upstream's reachability is checked, in ms. */
const PROBE_INTERVAL = 5_000;

export interface Reachability {
  /** True once the last contact (a probe or a request) succeeded. */
  ready(): boolean;
  /** Records what a request found (`kind` names a failure). */
  mark(ok: boolean, kind?: string): void;
  close(): void;
}

/** Starts probing `url`; `name` (the backend) and `target` (the URL probed) go into the log lines. */
export function probeReachability(
  url: URL,
  connectTimeout: number,
  name: string,
  logger: Logger,
  target: string = url.origin,
): Reachability {
  let reachable: boolean | undefined;
  const mark = (ok: boolean, kind?: string) => {
    if (ok !== reachable) {
      if (ok) logger.info({ backend: name, target }, 'upstream reachable');
      else logger.warn({ backend: name, target, kind }, 'upstream unreachable');
    }
    reachable = ok;
  };
  const probe = () => {
    const socket = connect({
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    });
    socket.setTimeout(connectTimeout, () => socket.destroy(new Error('connect timeout')));
    socket.once('connect', () => {
      mark(true);
      socket.destroy();
    });
    socket.once('error', () => mark(false, 'connect'));
  };
  probe();
  const timer = setInterval(probe, PROBE_INTERVAL).unref();
  return { ready: () => reachable === true, mark, close: () => clearInterval(timer) };
}
