// A request on its way to an LLM provider: the client's own credential headers out, the
// provider key in the provider's header, the API root mapped to the provider's base path,
// Azure's api-version, and the provider's host. Compiled once per ProviderIR (kept by
// identity), so a request pays a few header writes; the key is revealed once, into a private
// field no dump or log can reach.
import { CLIENT_API_ROOT, PROVIDER_PRESETS, type ProviderIR } from '@tollgate/api';

type Headers = Record<string, string | string[] | undefined>;

/**
 * Every header a provider key travels in (OpenAI-style, Azure, Anthropic): all of them go
 * before the provider's own is set, whichever the provider, so a client's key never reaches a
 * provider in another header.
 */
const KEY_HEADERS = ['authorization', 'api-key', 'x-api-key'] as const;

/** The Messages API version Anthropic gets when the client names none (the one version it has published). */
export const ANTHROPIC_VERSION = '2023-06-01';

export interface ProviderTarget {
  /** The host the provider is reached at, for its Host header (`<host>` on 80 and 443, else `<host>:<port>`). */
  readonly host: string;
  readonly port: number;
}

export class ProviderRequest {
  readonly #header: { readonly name: string; readonly value: string } | null;
  readonly #anthropic: boolean;
  readonly #basePath: string;
  readonly #apiVersion: string | null;

  constructor(readonly ir: ProviderIR) {
    const key = ir.apiKey?.value.reveal();
    const auth = PROVIDER_PRESETS[ir.type].auth;
    this.#header = key === undefined ? null : auth === 'Bearer' ? { name: 'authorization', value: `Bearer ${key}` } : { name: auth === 'XApiKey' ? 'x-api-key' : 'api-key', value: key };
    this.#anthropic = ir.type === 'Anthropic';
    this.#basePath = ir.basePath;
    this.#apiVersion = ir.apiVersion;
  }

  /** Sets what the provider needs on the upstream headers (in place). */
  headers(headers: Headers, target: ProviderTarget): void {
    if (this.#header) {
      for (const name of KEY_HEADERS) if (headers[name] !== undefined) delete headers[name];
      headers[this.#header.name] = this.#header.value;
    }
    // Not a credential: the version the client was written for stands.
    if (this.#anthropic && headers['anthropic-version'] === undefined) headers['anthropic-version'] = ANTHROPIC_VERSION;
    const h = target.host.includes(':') ? `[${target.host}]` : target.host;
    headers.host = target.port === 80 || target.port === 443 ? h : `${h}:${target.port}`;
  }

  /** The upstream path: the client's API root `/v1` replaced by the base path; any other path prefixed with it. */
  path(path: string): string {
    const base = this.#basePath;
    if (path === CLIENT_API_ROOT || path.startsWith(`${CLIENT_API_ROOT}/`) || path.startsWith(`${CLIENT_API_ROOT}?`)) {
      const rest = path.slice(CLIENT_API_ROOT.length);
      return base + rest || '/';
    }
    return base === '' ? path : path === '/' ? base : base + path;
  }

  /** The upstream query: Azure's api-version set (the client's own dropped). */
  query(query: string): string {
    if (this.#apiVersion === null) return query;
    const kept = query === '' ? [] : query.split('&').filter((pair) => pair !== '' && decodeName(pair) !== 'api-version');
    kept.push(`api-version=${encodeURIComponent(this.#apiVersion)}`);
    return kept.join('&');
  }
}

function decodeName(pair: string): string {
  const eq = pair.indexOf('=');
  const raw = eq < 0 ? pair : pair.slice(0, eq);
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return raw.toLowerCase();
  }
}

const compiled = new WeakMap<ProviderIR, ProviderRequest>();

/** The compiled form of a provider block, made once per snapshot object. */
export function providerRequest(ir: ProviderIR): ProviderRequest {
  let p = compiled.get(ir);
  if (!p) compiled.set(ir, (p = new ProviderRequest(ir)));
  return p;
}
