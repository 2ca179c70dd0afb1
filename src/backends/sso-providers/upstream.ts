/**
 * The SSO providers backend on an upstream service speaking this API. The gateway has validated the
 * whole form by the time `update` runs; the client's multipart body then goes out byte for byte (the
 * same parts), and the upstream's answer is relayed unchanged. Whether the provider and the role
 * exist is the upstream's to say: its 404 or 400 passes through.
 */
import type { UpstreamConfig } from '../../config/schema.js';
import { passedHeaders } from '../../upstream/answer.js';
import { createUpstreamClient, type UpstreamDeps } from '../../upstream/client.js';
import { RelayedResponse } from '../relayed.js';
import type { SsoProvidersBackend } from './backend.js';

export async function createUpstreamSsoProviders(
  config: UpstreamConfig,
  name: string,
  deps: UpstreamDeps,
): Promise<SsoProvidersBackend> {
  const client = createUpstreamClient(config, name, deps);
  return {
    // Never asked: `exists` answers for the upstream, which checks when the update arrives.
    get: async () => undefined,
    exists: async () => true,
    roleExists: async () => true,
    async update(_id, _patch, signal, request) {
      const contentType = request?.req.headers['content-type'];
      if (request?.body === undefined || contentType === undefined) {
        throw new Error('an upstream update needs the request it forwards');
      }
      const answer = await client.send({
        method: 'PATCH',
        target: request.rawTarget,
        body: request.body,
        headers: { 'content-type': contentType, accept: 'application/json' },
        client: request,
        signal,
      });
      return new RelayedResponse(answer.statusCode, passedHeaders(answer.headers), answer.body);
    },
    ready: () => client.ready(),
    close: () => client.close(),
  };
}
