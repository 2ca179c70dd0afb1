/**
 * SAML 2.0 metadata: what the gateway reads from an identity provider's metadata document.
 *
 * The document is parsed by saxes, a namespace-aware, non-validating parser that never fetches
 * anything and never expands entities; a DOCTYPE (and so any entity declaration) is refused outright,
 * so neither an external entity nor an expansion bomb can do harm.
 */
import { SaxesParser, type SaxesTagNS } from 'saxes';
import { errors, isGatewayError } from '../errors.js';

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const HTTP_POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
/**
 * Real metadata nests about ten elements deep. The parser's namespace look-up costs the depth at each
 * element, so a deep document would take time quadratic in its size, all of it blocking the process.
 */
const MAX_DEPTH = 100;

/** What an update takes from the metadata document. */
export interface SamlMetadata {
  /** The chosen `EntityDescriptor`'s `entityID`. */
  idpIssuerUri: string;
  /** The `Location` of its first `SingleSignOnService` with the HTTP-POST binding. */
  idpSsoUri: string;
  /** The document as text (decoded once here, so the caller keeps no second copy). */
  text: string;
}

/** One `EntityDescriptor` that may be chosen, as it was seen. */
interface Entity {
  entityId: string;
  hasIdp: boolean;
  /** The first HTTP-POST service: its `Location` ('' when the attribute is missing). */
  postLocation: string | undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads the issuer and the HTTP-POST sign-on address from SAML 2.0 metadata: an `EntityDescriptor`,
 * or an `EntitiesDescriptor` whose first (depth-first) entity with an `IDPSSODescriptor` is used.
 * Throws the catalogue's 400 (`form:metadata`) for anything else; messages never echo the document.
 */
export function parseSamlMetadata(xml: Buffer): SamlMetadata {
  let text: string;
  try {
    text = utf8.decode(xml);
  } catch {
    throw errors.metadataMalformed('not valid UTF-8');
  }

  const parser = new SaxesParser({ xmlns: true, position: true });
  const stack: SaxesTagNS[] = [];
  const entities: Entity[] = [];
  const byTag = new Map<SaxesTagNS, Entity>();
  const groups = new Set<SaxesTagNS>();
  let root: SaxesTagNS | undefined;

  parser.on('doctype', () => {
    throw errors.metadataDoctype();
  });
  parser.on('opentag', (tag) => {
    const parent = stack.at(-1);
    const grandparent = stack.at(-2);
    root ??= tag;
    if (stack.length >= MAX_DEPTH) throw errors.metadataTooDeep(MAX_DEPTH);
    stack.push(tag);
    if (!isMd(tag)) return;
    // Only the root and descriptors nested in a chain of EntitiesDescriptor from it are candidates.
    const inChain = parent === undefined || groups.has(parent);
    if (tag.local === 'EntitiesDescriptor' && inChain) {
      groups.add(tag);
    } else if (tag.local === 'EntityDescriptor' && inChain) {
      const entity: Entity = { entityId: attribute(tag, 'entityID'), hasIdp: false, postLocation: undefined };
      entities.push(entity);
      byTag.set(tag, entity);
    } else if (tag.local === 'IDPSSODescriptor' && parent !== undefined) {
      const entity = byTag.get(parent);
      if (entity) entity.hasIdp = true;
    } else if (tag.local === 'SingleSignOnService' && parent !== undefined && grandparent !== undefined) {
      const entity = byTag.get(grandparent);
      if (entity && isMdNamed(parent, 'IDPSSODescriptor') && attribute(tag, 'Binding') === HTTP_POST) {
        entity.postLocation ??= attribute(tag, 'Location');
      }
    }
  });
  parser.on('closetag', () => {
    stack.pop();
  });

  try {
    parser.write(text).close();
  } catch (err) {
    if (isGatewayError(err)) throw err;
    throw errors.metadataMalformed(shortReason(err));
  }

  if (
    root === undefined ||
    !isMd(root) ||
    (root.local !== 'EntityDescriptor' && root.local !== 'EntitiesDescriptor')
  ) {
    throw errors.metadataNotSaml();
  }
  const entity = entities.find((e) => e.hasIdp);
  // No identity provider at all is reported as the reference does: no SSO service with POST binding.
  if (entity === undefined || entity.postLocation === undefined) throw errors.metadataNoPostBinding();
  if (entity.entityId === '') throw errors.metadataMissingAttribute('entityID');
  if (entity.postLocation === '') throw errors.metadataMissingAttribute('Location');
  return { idpIssuerUri: entity.entityId, idpSsoUri: entity.postLocation, text };
}

function isMd(tag: SaxesTagNS): boolean {
  return tag.uri === MD;
}

function isMdNamed(tag: SaxesTagNS, local: string): boolean {
  return tag.uri === MD && tag.local === local;
}

/** The value of the un-namespaced attribute `local` as written (compared exactly), or '' when absent. */
function attribute(tag: SaxesTagNS, local: string): string {
  for (const attr of Object.values(tag.attributes)) {
    if (attr.uri === '' && attr.local === local) return attr.value;
  }
  return '';
}

/**
 * saxes messages are `line:column: text`, and some texts end by quoting the document (`unclosed
 * tag: <name>`): keep the position and the fixed part only.
 */
function shortReason(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const m = /^(\d+):(\d+): ([^:]*)/.exec(message);
  if (!m) return 'parse error';
  const what = (m[3] as string).trim().replace(/\.$/, '');
  return `${what} at line ${m[1]}, column ${m[2]}`;
}
