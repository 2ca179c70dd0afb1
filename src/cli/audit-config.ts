/**
 * The audit trail a gateway configuration file names, for `gateway audit`: the file read and checked
 * as the gateway reads it, then the trail its `audit` key (or its SSO providers backend) names.
 */
import { loadConfigFile } from '../config/load.js';
import { type AuditTarget, auditStoreFor } from '../audit/store-for.js';

/** The trail `file` configures (undefined: none); throws `ConfigError` naming each problem. */
export function auditTargetOf(
  file: string,
  env: Readonly<Record<string, string | undefined>>,
): AuditTarget | undefined {
  return auditStoreFor(loadConfigFile(file, { env }));
}
