/**
 * What a valid configuration still does that an operator should know: said by `check-config` on
 * stderr and logged at start and on every reload.
 */
import { tlsWarnings } from './tls.js';
import { jwtWarnings } from './jwt-providers.js';
import type { Config } from './schema.js';

/** Each warning about `config`, as one sentence naming the key. */
export function configWarnings(config: Config): string[] {
  const warnings = [...jwtWarnings(config.auth.jwt), ...tlsWarnings(config)];
  if (config.server.trust_proxy) {
    warnings.push(
      'server.trust_proxy: true trusts every X-Forwarded-For hop, so any client can choose its address: list your proxies in server.trusted_proxies instead',
    );
  }
  if (config.backends.sso_providers.type === 'upstream' && config.audit?.store === undefined) {
    warnings.push(
      'audit: backends.sso_providers is "upstream" and no audit.store is set: the service records SSO provider ' +
        "changes under the gateway's credentials; configure audit.store to record the real actor",
    );
  }
  return warnings;
}
