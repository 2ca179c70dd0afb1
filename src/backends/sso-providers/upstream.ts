/**
 * The SSO providers backend on an upstream service speaking this API. The gateway has validated the
 * whole form by the time `update` runs; the client's multipart body then goes out byte for byte (the
 * same parts), and the upstream's answer is relayed unchanged. Whether the provider and the role
 * exist is the upstream's to say: its 404 or 400 passes through.
 */
import { createUpstreamClient } from '../../upstream/client.js';
import { upstreamBackendShape, type UpstreamConfig } from '../../config/upstream.js';
import type { BackendType } from '../backend-type.js';
import type { SsoProvidersBackend } from './backend.js';

/** `{type: upstream, url, auth, …}` for the SSO providers. */
export const upstreamSsoProviders: BackendType<UpstreamConfig & { type: 'upstream' }, SsoProvidersBackend> = {
  config: upstreamBackendShape,
  async open(config, deps) {
    const client = createUpstreamClient(config, deps.name, deps);
    return {
      relays: true,
      // Never asked: `exists` answers for the upstream, which checks when the update arrives.
      get: async () => undefined,
      exists: async () => true,
      roleExists: async () => true,
      async update(_id, _patch, call) {
        const { request, stop } = call;
        const headers = { accept: 'application/json' };
        return client.relay({ request, headers, signal: stop, meter: call, parent: call.span });
      },
      ready: () => client.ready(),
      close: () => client.close(),
    };
  },
};
