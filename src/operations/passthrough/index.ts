/**
 * Pass-through: any other authenticated `/api/v2` request of an identity holding the `passthrough`
 * permission, forwarded to the service unchanged (contract §5), so that the gateway can stand in
 * front of the whole API; and the front door's public requests (§11), forwarded on the same relay
 * without any credential of the gateway's. It relays HTTP by nature: the relay holds the live
 * request and response.
 */
import { backendCall } from '../../http/forwarded.js';
import type { RequestContext } from '../../http/context.js';
import { createProxyRelay, type ForwardOptions } from './relay.js';
import type { UpstreamConfig } from '../../config/upstream.js';
import type { UpstreamDeps } from '../../upstream/endpoint.js';
import type { Operation } from '../operation.js';

/** What the front door is told of a public request's answer. */
export interface PublicHooks {
  /** The service's status, before the answer is written (a 401 on `login` counts against the address). */
  answered?(ctx: RequestContext, status: number): void;
}

const PUBLIC: ForwardOptions = Object.freeze({ public: true });

/** The pass-through to the service of `config`, and its public twin on the same relay. */
export function createPassthroughOperations(
  config: UpstreamConfig,
  deps: UpstreamDeps,
  hooks: PublicHooks = {},
): { passthrough: Operation; public: Operation } {
  const relay = createProxyRelay(config, deps);
  const { answered } = hooks;
  return {
    passthrough: {
      id: 'passthrough',
      permission: 'passthrough',
      handle(ctx) {
        const call = backendCall(ctx);
        return relay.forward(ctx, call.request, call.signal, call);
      },
      ready: () => relay.ready(),
      close: () => relay.close(),
    },
    public: {
      id: 'public',
      permission: 'passthrough',
      public: true,
      handle(ctx) {
        const call = backendCall(ctx);
        const meter =
          answered === undefined
            ? call
            : {
                spent: (ms: number) => call.spent?.(ms),
                answered: (status: number) => answered(ctx, status),
              };
        return relay.forward(ctx, call.request, call.signal, meter, PUBLIC);
      },
    },
  };
}
