import { code } from '../../core/format.js';

/**
 * What the upstream clients (Argo CD, Prometheus) say the same way about a failed request: a TLS verification
 * failure by its Node error code, and the first bytes of a body that is not what the endpoint promises.
 */

const TLS_CODES = new Set([
  'CERT_HAS_EXPIRED',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export function isTlsErrorCode(errorCode: string | undefined): boolean {
  return errorCode !== undefined && TLS_CODES.has(errorCode);
}

/** How much of a bad body an error quotes: enough to recognise a proxy's page or a cut-off list. */
const BODY_EXCERPT_CHARS = 100;

/**
 * The first characters of a body, on one line and printable, in a code span. Credentials that an echoing
 * proxy might send back (a Bearer token, Basic credentials, a JWT) are blanked: this text goes to logs and Slack.
 */
export function bodyExcerpt(body: string): string {
  const flat = body
    .slice(0, 4 * BODY_EXCERPT_CHARS)
    .replace(/((?:Bearer|Basic)\s+)[^\s"',;]+/gi, '$1[redacted]')
    // A JWT (and any cut-off piece of one) starts with the base64 of `{"`.
    .replace(/eyJ[\w.-]*/g, '[redacted]')
    .replace(/\s+/g, ' ')
    .replace(/\p{C}/gu, '?')
    .trim();
  if (!flat) return '';
  return code(flat.length > BODY_EXCERPT_CHARS ? `${flat.slice(0, BODY_EXCERPT_CHARS)}…` : flat);
}
