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
  warnings.push(...frontDoorWarnings(config));
  return warnings;
}

/**
 * The front door's (contract §11): the web application or the login served while the service judges
 * forwarded requests by the gateway's own token, and two stores of what the service also holds.
 */
function frontDoorWarnings(config: Config): string[] {
  const { passthrough, routes = [] } = config;
  if (passthrough === undefined) return [];
  const warnings: string[] = [];
  const type = passthrough.auth.type;
  if (type !== 'client') {
    const inUse = ['ui', 'login'].filter((name) => routes.find((r) => r.name === name)?.auth !== 'deny');
    if (inUse.length > 0) {
      warnings.push(
        `passthrough.auth: type "${type}" while the ${inUse.join(' and ')} route${inUse.length > 1 ? 's are' : ' is'} in use: the service judges every authenticated forwarded request by the gateway's own token, so every user of its web application would act as the gateway; use { type: client }, or restrict them with routes (e.g. { name: ui, prefix: /ui/, auth: deny })`,
      );
    }
  }
  for (const [name, backend] of Object.entries(config.backends)) {
    if (backend.type !== 'upstream') {
      warnings.push(
        `backends.${name}: type "${backend.type}" while passthrough is on: the gateway and the service then hold two different sets of what this operation serves (use type: upstream towards the service)`,
      );
    }
  }
  return warnings;
}
