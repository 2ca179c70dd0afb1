/**
 * What a patch changes, decided once for every store: the fields whose value differs, named and
 * ordered as the audit line names them. A store applies the changes to its own record shape.
 */
import type { AutoProvision, SsoProviderPatch } from './backend.js';

/** The patchable fields of a provider, as any store holds them. */
export interface PatchableFields {
  name: string;
  display_name: string;
  idp_issuer_uri: string;
  idp_sso_uri: string;
  metadata_xml: string;
  auto_provision: AutoProvision;
}

type TopField = Exclude<keyof PatchableFields, 'auto_provision'>;

/** One change: `field` as the audit names it, and where the new value goes. */
export type Change =
  | { readonly field: TopField; readonly key: TopField; readonly value: string }
  | {
      readonly field: `config.auto_provision.${keyof AutoProvision}`;
      readonly key: keyof AutoProvision;
      readonly value: AutoProvision[keyof AutoProvision];
    };

/** The changes `patch` makes to `current`; empty for a no-op. */
export function changesOf(current: PatchableFields, patch: SsoProviderPatch): Change[] {
  const changes: Change[] = [];
  const set = (key: TopField, value: string) => {
    if (current[key] !== value) changes.push({ field: key, key, value });
  };
  if (patch.name !== undefined) {
    set('name', patch.name);
    set('display_name', patch.name);
  }
  if (patch.metadata !== undefined) {
    set('idp_issuer_uri', patch.metadata.idpIssuerUri);
    set('idp_sso_uri', patch.metadata.idpSsoUri);
    set('metadata_xml', patch.metadata.xml);
  }
  const auto = patch.autoProvision;
  if (auto !== undefined) {
    for (const key of ['enabled', 'default_role_id', 'role_provision'] as const) {
      if (current.auto_provision[key] !== auto[key]) {
        changes.push({ field: `config.auto_provision.${key}`, key, value: auto[key] });
      }
    }
  }
  return changes;
}
