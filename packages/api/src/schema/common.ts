// Building blocks shared by every schema. Each carries a `description` (it becomes the
// `kubectl explain` text of the generated CRD) and, where a pattern alone would make a poor
// error, an `expected` hint that the validator prints instead of the raw regular expression.
import { Type, type TString, type TInteger } from '@sinclair/typebox';
import { DURATION_MAX_LENGTH, type DurationRules } from '../duration.js';
import { HOST_PORT_MAX_LENGTH, MAX_DNS_NAME, type PortRules } from '../host-port.js';

export const HOSTNAME_PATTERN = '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
export const PRECISE_HOSTNAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
export const HEADER_NAME_PATTERN = "^[A-Za-z0-9!#$%&'*+\\-.^_\\x60|~]+$";
// Field values HTTP can carry (RFC 9110 field-value, as Node.js checks it): visible ASCII,
// space, tab and the Latin-1 range; no CR, LF or other control characters, which would split
// or corrupt the header.
export const HEADER_VALUE_PATTERN = '^[\\t\\x20-\\x7e\\x80-\\xff]*$';
export const HEADER_VALUE_EXPECTED = 'a header value of visible characters, spaces and tabs (no CR, LF or other control characters)';
// Paths and path replacements: no control characters (a CR or LF would split the request
// line sent upstream or the Location header of a redirect).
export const NO_CONTROL_PATTERN = '^[^\\x00-\\x1f\\x7f]*$';

/**
 * A Gateway API Duration. The `duration` keyword runs checkDuration (ajv) and becomes a
 * pattern plus CEL bounds in the CRD (crd/structural.ts).
 */
export function Duration(description: string, rules: DurationRules = {}): TString {
  return Type.String({ maxLength: DURATION_MAX_LENGTH, description, duration: { allowZero: rules.allowZero ?? false } });
}

export function HeaderValue(description: string): TString {
  return Type.String({ minLength: 1, maxLength: 4096, pattern: HEADER_VALUE_PATTERN, description, expected: HEADER_VALUE_EXPECTED });
}

export function Hostname(description: string): TString {
  return Type.String({
    minLength: 1,
    maxLength: 253,
    pattern: HOSTNAME_PATTERN,
    description,
    expected: 'a lower-case DNS name, optionally with a leading "*." wildcard label (e.g. api.example.com or *.example.com)',
  });
}

export function PreciseHostname(description: string): TString {
  return Type.String({
    minLength: 1,
    maxLength: 253,
    pattern: PRECISE_HOSTNAME_PATTERN,
    description,
    expected: 'a lower-case DNS name without wildcard (e.g. api.example.com)',
  });
}

export function HeaderName(description: string): TString {
  return Type.String({
    minLength: 1,
    maxLength: 256,
    pattern: HEADER_NAME_PATTERN,
    description,
    expected: 'an HTTP header name (letters, digits and !#$%&\'*+-.^_`|~)',
  });
}

/**
 * `<host>:<port>`. The `hostPort` keyword runs parseHostPort (ajv) and becomes the equivalent
 * pattern in the CRD (crd/structural.ts). `ephemeralPort` allows port 0, for listen addresses.
 */
export function HostPort(description: string, rules: PortRules = {}): TString {
  return Type.String({ maxLength: HOST_PORT_MAX_LENGTH, description, hostPort: { ephemeralPort: rules.ephemeralPort ?? false } });
}

/** A host without port (a listen address): the `host` keyword runs parseHost. */
export function Host(description: string): TString {
  return Type.String({ maxLength: MAX_DNS_NAME, description, host: true });
}

export function Port(description: string): TInteger {
  return Type.Integer({ minimum: 1, maximum: 65535, description });
}

export function PositiveInt(description: string, maximum = 2_147_483_647): TInteger {
  return Type.Integer({ minimum: 1, maximum, description });
}

/**
 * A closed set of string or integer values. Emitted as a JSON Schema `enum` (not a union of
 * constants) so validation errors and the generated CRD both list the allowed values plainly.
 */
export function Enum<const T extends readonly (string | number)[]>(values: T, description: string) {
  const type = typeof values[0] === 'number' ? 'integer' : 'string';
  return Type.Unsafe<T[number]>({ type, enum: [...values], description });
}
