// Host and host:port parsing, the one implementation behind every address Tollgate reads:
// backend and rate limit service addresses in configs and GatewayPolicies, the listen
// addresses (config.adminAddr, --admin-addr, bind addresses), and the command lines of gwctl
// and mock-llm. Small programs import it alone (`@tollgate/api/host-port`), without the
// schemas and their validator.
//
// A host is a DNS name (labels of letters, digits and "-", the last label starting with a
// letter, at most 253 characters), an IPv4 address or an IPv6 address; in host:port the IPv6
// address is in brackets. A port is 1-65535, or 0 (the system picks a free port) where the
// caller listens and says so. Its only import is the package's error catalog, itself without
// dependencies.
import { isIPv4, isIPv6 } from 'node:net';
import { API_ERRORS } from './errors/catalog.js';

export type HostKind = 'dns' | 'ipv4' | 'ipv6';

export interface ParsedHost {
  /** Without brackets, as a socket API takes it. */
  readonly host: string;
  readonly kind: HostKind;
}

export interface ParsedHostPort extends ParsedHost {
  readonly port: number;
}

export interface PortRules {
  /** Allow port 0 (the system picks a free port): only for an address the process listens on. */
  readonly ephemeralPort?: boolean;
}

export interface HostPortRules extends PortRules {
  /** Host taken for ":<port>"; without it the host is required. */
  readonly defaultHost?: string;
}

/** What was wrong, phrased to follow `got "<value>"; ` (names the fix, e.g. the expected form). */
export type Parsed<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problem: string };

export const HOST_PORT_EXAMPLE = 'e.g. 127.0.0.1:9000 or llm.internal:8080';
export const HOST_PORT_EXPECTED = `expected <host>:<port>, ${HOST_PORT_EXAMPLE}`;
export const MAX_DNS_NAME = 253;
const MAX_LABEL = 63;
const LABEL = /^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?$/;

function fail<T>(problem: string): Parsed<T> {
  return { ok: false, problem };
}

function portRange(rules: PortRules): string {
  return rules.ephemeralPort ? 'from 0 to 65535 (0 picks a free port)' : 'from 1 to 65535';
}

/** A port given as text (a flag or the part after ":"). */
export function parsePort(text: string, rules: PortRules = {}): Parsed<number> {
  if (!/^[0-9]+$/.test(text)) return fail(`the port ${JSON.stringify(text)} is not a number; expected a port ${portRange(rules)}`);
  return checkPort(Number(text), rules);
}

/** A port given as a number (a config field, a CLI value already converted). */
export function checkPort(port: number, rules: PortRules = {}): Parsed<number> {
  if (!Number.isInteger(port) || port < 0 || port > 65535) return fail(`port ${port} is out of range; expected a port ${portRange(rules)}`);
  if (port === 0 && !rules.ephemeralPort) return fail('port 0 is only allowed for an address to listen on; expected a port from 1 to 65535');
  return { ok: true, value: port };
}

/** A host without port: a DNS name, an IPv4 address, or an IPv6 address (with or without brackets). */
export function parseHost(text: string): Parsed<ParsedHost> {
  if (text === '') return fail('the host is empty; expected a DNS name or an IP address, e.g. 127.0.0.1 or llm.internal');
  const bracketed = /^\[(.*)\]$/.exec(text);
  if (bracketed) {
    const inner = bracketed[1]!;
    return isIPv6(inner) ? { ok: true, value: { host: inner, kind: 'ipv6' } } : fail(`[${inner}] is not an IPv6 address, e.g. [::1] or [2001:db8::1]`);
  }
  if (isIPv6(text)) return { ok: true, value: { host: text, kind: 'ipv6' } };
  if (isIPv4(text)) return { ok: true, value: { host: text, kind: 'ipv4' } };
  if (text.includes(':')) return fail('expected a host without port (an IP address or a DNS name), e.g. 0.0.0.0 or ::');
  const labels = text.split('.');
  if (labels.every((l) => /^[0-9]+$/.test(l))) return fail(`${text} is not an IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1)`);
  if (text.length > MAX_DNS_NAME) return fail(`the host name is longer than ${MAX_DNS_NAME} characters`);
  for (const label of labels) {
    if (label === '') return fail(`${JSON.stringify(text)} has an empty label; expected a DNS name such as llm.internal`);
    if (label.length > MAX_LABEL) return fail(`the label "${label.slice(0, 20)}..." is longer than ${MAX_LABEL} characters`);
    if (!LABEL.test(label)) {
      return fail(`${JSON.stringify(text)} is not a DNS name (labels are letters, digits and "-", not starting or ending with "-"), e.g. llm.internal`);
    }
  }
  if (!/^[A-Za-z]/.test(labels[labels.length - 1]!)) return fail(`${JSON.stringify(text)} is not a DNS name: its last label must start with a letter`);
  return { ok: true, value: { host: text, kind: 'dns' } };
}

/** `<host>:<port>`, IPv6 in brackets. */
export function parseHostPort(text: string, rules: HostPortRules = {}): Parsed<ParsedHostPort> {
  let hostText: string;
  let portText: string;
  if (text.startsWith('[')) {
    const m = /^(\[[^\]]*\])(?::(.*))?$/.exec(text);
    if (!m || m[2] === undefined) return fail('expected [<IPv6 address>]:<port>, e.g. [::1]:9000');
    hostText = m[1]!;
    portText = m[2];
  } else {
    const idx = text.lastIndexOf(':');
    if (idx < 0) return fail(HOST_PORT_EXPECTED);
    hostText = text.slice(0, idx);
    portText = text.slice(idx + 1);
    if (hostText.includes(':')) return fail('an IPv6 address takes brackets, e.g. [::1]:9000');
  }
  if (hostText === '' && rules.defaultHost === undefined) return fail(`the host is missing; ${HOST_PORT_EXPECTED}`);
  const host = parseHost(hostText === '' ? (rules.defaultHost ?? '') : hostText);
  if (!host.ok) return host;
  const port = parsePort(portText, rules);
  if (!port.ok) return port;
  return { ok: true, value: { ...host.value, port: port.value } };
}

/** `<host>:<port>` again, with brackets around an IPv6 address (for URLs and messages). */
export function formatHostPort(hp: { readonly host: string; readonly port: number }): string {
  return hp.host.includes(':') ? `[${hp.host}]:${hp.port}` : `${hp.host}:${hp.port}`;
}

/** parseHostPort for callers that stop on a bad value: TG_ADDRESS_INVALID naming `field` (a flag or a config path). */
export function requireHostPort(text: string, field: string, rules: HostPortRules = {}): ParsedHostPort {
  const r = parseHostPort(text, rules);
  if (!r.ok) throw API_ERRORS.addressInvalid.create({ field, value: text, problem: r.problem });
  return r.value;
}

// The same rules as regular expressions, for the GatewayPolicy CRD (the API server cannot run
// this module). RE2 syntax; the IPv6 branch checks only the characters, and the DNS branch
// leaves the 253-character total to maxLength.
const PORT_RE = '([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
const OCTET_RE = '(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const LABEL_RE = '[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?';
const LAST_LABEL_RE = '[A-Za-z]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?';
const HOST_RE = `(\\[[0-9A-Fa-f:.]+\\]|(${OCTET_RE}\\.){3}${OCTET_RE}|(${LABEL_RE}\\.)*${LAST_LABEL_RE})`;

export function hostPattern(): string {
  return `^${HOST_RE}$`;
}

export function hostPortPattern(rules: PortRules = {}): string {
  return `^${HOST_RE}:${rules.ephemeralPort ? `(0|${PORT_RE})` : PORT_RE}$`;
}

/** Longest valid host:port: a 253-character name, ":" and five digits. */
export const HOST_PORT_MAX_LENGTH = MAX_DNS_NAME + 6;
