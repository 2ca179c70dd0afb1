/**
 * The front door under test: the real gateway on port 0 in front of a fake service (a real HTTP
 * server on port 0 that records every request it receives), and how to find a request's log line.
 */
import type { Test } from 'tap';
import { startGateway, type TestGateway, type TestResponse } from './gateway.js';
import { type StubUpstream, startUpstream, UPSTREAM_TOKEN_ID } from './upstream.js';
import { until } from './wait.js';

/** The gateway's own credentials towards the service, by pass-through `auth` type. */
export const AUTH_TYPES = {
  client: { type: 'client' },
  signature: { type: 'signature', token_id: UPSTREAM_TOKEN_ID, token_key: 'upstream-key' },
  bearer: { type: 'bearer', token: 'gateway-service-token' },
} as const;

export type AuthType = keyof typeof AUTH_TYPES;

/** A gateway whose pass-through leads to a fresh fake service, both closed when `t` ends. */
export async function frontDoor(
  t: Test,
  opts: { auth?: AuthType; passthrough?: Record<string, unknown>; gateway?: Record<string, unknown> } = {},
): Promise<{ gw: TestGateway; service: StubUpstream }> {
  const service = await startUpstream();
  const gw = await startGateway({
    ...opts.gateway,
    passthrough: { url: service.url, auth: AUTH_TYPES[opts.auth ?? 'client'], ...opts.passthrough },
  });
  t.teardown(async () => {
    await gw.close();
    await service.close();
  });
  return { gw, service };
}

/** The log line of the request `res` answered (found by its `RequestID`), once it is written. */
export async function lineOf(gw: TestGateway, res: TestResponse): Promise<Record<string, unknown>> {
  const id = res.headers.requestid;
  let line: Record<string, unknown> | undefined;
  await until(`the log line of request ${String(id)}`, () => {
    line = gw.logs.find((l) => l.msg === 'request' && l.request_id === id);
    return line !== undefined;
  });
  return line as Record<string, unknown>;
}
