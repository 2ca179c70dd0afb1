/**
 * The authentication schemes, in the order the stage asks them (contract §3). The one list to
 * extend: a new scheme is its own file exporting an `AuthScheme`, its entry here, and its keys in
 * the configuration schema. Bearer comes first: a 401 without credentials names its challenge first.
 */
import { bearer } from './bearer.js';
import { clientCertificate } from './client-certificate.js';
import type { AuthScheme } from './scheme.js';
import { signature } from './signature.js';

export const SCHEMES: readonly AuthScheme[] = [bearer, signature, clientCertificate];
