/** The SSO providers backend: the providers, their SAML data and the roles they may provision. */
import type { UpstreamAnswer } from '../../upstream/answer.js';
import type { Closable } from '../backend-type.js';
import type { BackendCall } from '../backend-call.js';
import type { Query } from '../postgres/session.js';

/** `{"time": ..., "valid": ...}` as the API writes a nullable time. */
export interface NullTime {
  time: string;
  valid: boolean;
}

/** `{"int32": ..., "valid": ...}` as the API writes a nullable integer. */
export interface NullInt32 {
  int32: number;
  valid: boolean;
}

export interface AutoProvision {
  enabled: boolean;
  default_role_id: number;
  role_provision: boolean;
}

/** An SSO provider in the wire shape of the API (contract section 4). */
export interface SsoProvider {
  id: number;
  created_at: string;
  updated_at: string;
  deleted_at: NullTime;
  name: string;
  display_name: string;
  idp_issuer_uri: string;
  idp_sso_uri: string;
  principal_attribute_mappings: string[];
  sp_issuer_uri: string;
  sp_sso_uri: string;
  sp_metadata_uri: string;
  sp_acs_uri: string;
  sso_provider_id: NullInt32;
  config: { auto_provision: AutoProvision };
}

/** A validated change to a provider. Absent fields are left as they are. */
export interface SsoProviderPatch {
  /** Trimmed; sets both `name` and `display_name`. */
  name?: string;
  /** The metadata document and what was read from it. */
  metadata?: { xml: string; idpIssuerUri: string; idpSsoUri: string };
  autoProvision?: AutoProvision;
}

/** The result of an update: the provider after it, and which fields changed (empty for a no-op). */
export interface SsoProviderUpdate {
  provider: SsoProvider;
  changed: string[];
}

/** What an update runs at its commit point, besides the change. */
export interface UpdateHooks {
  /**
   * A store with transactions (PostgreSQL) runs this inside the change's transaction, right before
   * its commit, with the transaction's statements: a rejection rolls the change back. Others ignore it.
   */
  readonly beforeCommit?: (result: SsoProviderUpdate, query: Query) => Promise<void>;
}

export interface SsoProvidersBackend extends Closable {
  /**
   * True for a backend that forwards the request (an upstream): once it went out, a failure leaves
   * the outcome unknown (the audit trail then writes none). Absent: false.
   */
  readonly relays?: boolean;
  /** The provider whose `sso_provider_id.int32` is `ssoProviderId`, or undefined. */
  get(ssoProviderId: number, call: BackendCall): Promise<SsoProvider | undefined>;
  /**
   * Whether the provider exists, asked before the form is read (404 first). Absent: `get` decides.
   * A backend that cannot tell in advance (an upstream) answers true and lets `update` answer.
   */
  exists?(ssoProviderId: number, call: BackendCall): Promise<boolean>;
  /** True when `roleId` names a role `default_role_id` may take. */
  roleExists(roleId: number, call: BackendCall): Promise<boolean>;
  /**
   * Applies `patch` atomically (one commit point); undefined when the provider no longer exists.
   * A patch that changes nothing writes nothing. Concurrent updates never lose one another. An
   * upstream forwards the request's form and answers with its own response, relayed unchanged.
   */
  update(
    ssoProviderId: number,
    patch: SsoProviderPatch,
    call: BackendCall,
    hooks?: UpdateHooks,
  ): Promise<SsoProviderUpdate | undefined | UpstreamAnswer>;
}

/** A backend that answers updates itself (the local file, PostgreSQL): never a relayed answer. */
export interface SsoProvidersStore extends SsoProvidersBackend {
  update(
    ssoProviderId: number,
    patch: SsoProviderPatch,
    call: BackendCall,
    hooks?: UpdateHooks,
  ): Promise<SsoProviderUpdate | undefined>;
}
