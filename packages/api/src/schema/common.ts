// Building blocks shared by every schema. Each carries a `description` (it becomes the
// `kubectl explain` text of the generated CRD) and, where a pattern alone would make a poor
// error, an `expected` hint that the validator prints instead of the raw regular expression.
import { Type, type TString, type TInteger } from '@sinclair/typebox';

export const DURATION_PATTERN = '^([0-9]{1,5}(h|m|s|ms)){1,4}$';
export const HOSTNAME_PATTERN = '^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
export const PRECISE_HOSTNAME_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
export const HEADER_NAME_PATTERN = "^[A-Za-z0-9!#$%&'*+\\-.^_\\x60|~]+$";
// host:port where host is a DNS name, an IPv4 address or a bracketed IPv6 address.
export const HOST_PORT_PATTERN = '^(\\[[0-9a-fA-F:.]+\\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):[0-9]{1,5}$';

export function Duration(description: string): TString {
  return Type.String({ pattern: DURATION_PATTERN, description, expected: 'a duration such as 500ms, 10s, 1m or 1h30m' });
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

export function HostPort(description: string): TString {
  return Type.String({
    pattern: HOST_PORT_PATTERN,
    description,
    expected: '<host>:<port>, e.g. 127.0.0.1:9000 or llm.internal:8080',
  });
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
