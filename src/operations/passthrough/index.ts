/**
 * Pass-through: any other authenticated `/api/v2` request of an identity holding the `passthrough`
 * permission, forwarded to the service unchanged (contract §5), so that the gateway can stand in
 * front of the whole API. It relays HTTP by nature: the relay holds the live request and response.
 * The front door's public requests (§11) go to the same service without credentials (`public.ts`).
 */
import { backendCall } from '../../http/forwarded.js';
import { createProxyRelay } from './relay.js';
import type { UpstreamConfig } from '../../config/upstream.js';
import type { UpstreamDeps } from '../../upstream/endpoint.js';
import type { Operation } from '../operation.js';

export { createPublicOperation, type PublicHooks } from './public.js';

/** The pass-through to the service of `config`. */
export function createPassthroughOperation(config: UpstreamConfig, deps: UpstreamDeps): Operation {
  const relay = createProxyRelay(config, deps);
  return {
    id: 'passthrough',
    permission: 'passthrough',
    handle(ctx) {
      const call = backendCall(ctx);
      return relay.forward(ctx, call.request, call.signal, call);
    },
    ready: () => relay.ready(),
    close: () => relay.close(),
  };
}
