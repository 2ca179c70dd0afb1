/**
 * The codes of what the operations refuse in a request they were allowed to receive (contract §4):
 * path parameters, unknown resources, the SSO provider form and its SAML metadata.
 */
import type { CodeFamily } from './entry.js';

/** Path parameters and what they name. */
export const PATH = {
  GW_ID_MALFORMED: {
    status: 400,
    message: 'id is malformed',
    reason: "A path id is not a decimal from 1 to 2147483647 (the envelope's context names it).",
    action: 'Send the id in decimal, without sign or leading `+`.',
  },
  GW_COLLECTOR_TYPE_INVALID: {
    status: 400,
    message: 'Invalid collector type: <value>',
    reason: 'The collector type is not `sharphound`, `azurehound` or `openhound` (case-sensitive).',
    action: 'Use one of the three collector types.',
  },
  GW_RELEASE_TAG_INVALID: {
    status: 400,
    message: 'release tag must be "latest" or a semantic version such as v1.2.3',
    reason: 'The release tag is neither `latest` nor a semantic version.',
    action: 'Send `latest` or `vMAJOR.MINOR.PATCH`.',
  },
  GW_RESOURCE_NOT_FOUND: {
    status: 404,
    message: 'resource not found',
    reason:
      'The path names no SSO provider, tag member or collector release (the context names the parameter).',
    action: 'Check the id or version.',
  },
} as const satisfies CodeFamily;

/** The multipart form of Update SSO Provider. */
export const FORM = {
  GW_CONTENT_TYPE_NOT_MULTIPART: {
    status: 400,
    message: 'Content-Type must be multipart/form-data with a boundary',
    reason: 'The request is not `multipart/form-data` with a boundary.',
    action: 'Send the form as `multipart/form-data`.',
  },
  GW_BODY_EMPTY: {
    status: 400,
    message: 'request body is empty',
    reason: 'A zero-length body where a form is expected.',
    action: 'Send a form (a form with no parts is a valid no-op).',
  },
  GW_FORM_MALFORMED: {
    status: 400,
    message: 'malformed multipart form: <why>',
    reason: 'The body is not a well-formed multipart form for its boundary.',
    action: 'Check how the client builds the form.',
  },
  GW_FORM_TOO_LARGE: {
    status: 413,
    message: 'multipart form is over the limit: <what>',
    reason: 'The form has more parts than the form limits allow.',
    action: 'Send only the parts the operation takes.',
  },
  GW_FORM_PART_TOO_LARGE: {
    status: 413,
    message: 'form part "<part>" is larger than the limit of <bytes> bytes',
    reason: 'A text field or file part is over its size limit.',
    action: 'Send a smaller part (the metadata file has its own limit).',
  },
  GW_FORM_PART_UNEXPECTED: {
    status: 400,
    message: 'unexpected form part "<part>"',
    reason: 'A part whose name the operation does not take.',
    action: 'Send only `name`, `metadata` and the `config.auto_provision.*` parts.',
  },
  GW_FORM_PART_DUPLICATED: {
    status: 400,
    message: 'expected only one "<part>" parameter',
    reason: 'A part sent twice.',
    action: 'Send each part once.',
  },
  GW_FORM_PART_NOT_FILE: {
    status: 400,
    message: '"<part>" parameter must be a file with a filename',
    reason: '`metadata` sent as a text field, or without a filename.',
    action: 'Send `metadata` as a file part with a filename.',
  },
  GW_FORM_PART_NOT_TEXT: {
    status: 400,
    message: '"<part>" parameter must be a text field, not a file',
    reason: 'A text part sent as a file.',
    action: 'Send the part as a plain form field.',
  },
  GW_FORM_TEXT_INVALID: {
    status: 400,
    message: '"<part>" parameter must be valid UTF-8 text without NUL characters',
    reason: 'A text part or file name that is not valid UTF-8, or holds a NUL.',
    action: 'Send UTF-8 text.',
  },
  GW_FORM_PART_MISSING: {
    status: 400,
    message: 'form is missing "<part>" parameter',
    reason: 'One of the three `config.auto_provision.*` parts is sent without the others.',
    action: 'Send all three `config.auto_provision.*` parts, or none.',
  },
  GW_FORM_PART_NOT_BOOL: {
    status: 400,
    message: '"<part>" parameter could not be converted to bool',
    reason: 'A boolean part that is not one of `1 t T TRUE true True 0 f F FALSE false False`.',
    action: 'Send `true` or `false`.',
  },
  GW_FORM_PART_NOT_INT: {
    status: 400,
    message: '"<part>" parameter could not be converted to int',
    reason: 'An integer part that is not a decimal integer.',
    action: 'Send a decimal integer.',
  },
  GW_FORM_PART_INVALID: {
    status: 400,
    message: '"<part>" parameter is invalid',
    reason: '`config.auto_provision.default_role_id` is not a positive 32-bit integer naming a known role.',
    action: 'Send the id of an existing role.',
  },
  GW_NAME_INVALID: {
    status: 400,
    message: '"name" parameter is invalid: <why>',
    reason: '`name` is empty after trimming, longer than 255 characters, or holds control characters.',
    action: 'Send a name of 1 to 255 printable characters.',
  },
} as const satisfies CodeFamily;

/** The SAML metadata document of the form's `metadata` part. */
export const METADATA = {
  GW_METADATA_MALFORMED: {
    status: 400,
    message: 'metadata is not well-formed XML: <why>',
    reason: 'The metadata file is not well-formed XML (or not UTF-8).',
    action: "Send the identity provider's metadata document as it publishes it.",
  },
  GW_METADATA_TOO_DEEP: {
    status: 400,
    message: 'metadata nests elements more than <depth> deep',
    reason: 'The document nests elements deeper than any metadata document does.',
    action: "Send the identity provider's metadata document.",
  },
  GW_METADATA_DOCTYPE: {
    status: 400,
    message: 'metadata must not contain a DOCTYPE or entity declaration',
    reason: 'A DOCTYPE or entity declaration (never expanded or fetched).',
    action: 'Remove the DOCTYPE from the document.',
  },
  GW_METADATA_NOT_SAML: {
    status: 400,
    message: 'metadata is not a SAML 2.0 EntityDescriptor or EntitiesDescriptor',
    reason: 'The root element is not SAML 2.0 metadata.',
    action: 'Send SAML 2.0 metadata (`urn:oasis:names:tc:SAML:2.0:metadata`).',
  },
  GW_METADATA_NO_POST_BINDING: {
    status: 400,
    message: 'metadata does not have a SSO service that supports HTTP POST binding',
    reason: 'No `IDPSSODescriptor` has a `SingleSignOnService` with the HTTP-POST binding.',
    action: 'Enable the HTTP-POST binding at the identity provider.',
  },
  GW_METADATA_ATTRIBUTE_MISSING: {
    status: 400,
    message: 'metadata is missing the <attribute> attribute',
    reason: 'The entity has an empty `entityID`, or its POST service an empty `Location`.',
    action: "Fix the identity provider's metadata.",
  },
} as const satisfies CodeFamily;
