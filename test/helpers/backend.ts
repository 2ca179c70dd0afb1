/** Calling a backend directly, as an operation does: a `BackendCall` for a signal. */
import type { BackendCall } from '../../src/backends/backend-call.js';
import { type ForwardedRequest, neutralRequest } from '../../src/upstream/forwarded.js';

/** A call under `signal` (never aborted by default), forwarding `request` (a neutral GET by default). */
export function callOf(
  signal: AbortSignal = new AbortController().signal,
  request: ForwardedRequest = neutralRequest('GET', '/'),
): BackendCall {
  return { signal, stop: signal, request };
}

/** An SSO provider as the local store file holds it (`id` defaults to `ssoId`), `over` merged in. */
export function provider(ssoId: number, id = ssoId, over: Record<string, unknown> = {}) {
  return {
    id,
    created_at: '2024-01-01T00:00:00Z',
    updated_at: '2024-01-02T00:00:00Z',
    deleted_at: { time: '0001-01-01T00:00:00Z', valid: false },
    name: `provider ${ssoId}`,
    display_name: `provider ${ssoId}`,
    idp_issuer_uri: 'urn:idp',
    idp_sso_uri: 'https://idp.example.com/sso',
    principal_attribute_mappings: ['email', 'groups'],
    sp_issuer_uri: 'https://sp.example.com',
    sp_sso_uri: 'https://sp.example.com/sso',
    sp_metadata_uri: 'https://sp.example.com/metadata',
    sp_acs_uri: 'https://sp.example.com/acs',
    sso_provider_id: { int32: ssoId, valid: true },
    metadata_xml: '<md:EntityDescriptor/>',
    auto_provision: { enabled: false, default_role_id: 1, role_provision: false },
    ...over,
  };
}
