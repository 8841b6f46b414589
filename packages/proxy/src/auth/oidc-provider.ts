// The proxy's calls to an OpenID provider: its discovery document, and the token endpoint
// (the code exchange and refreshes). Every call goes to the policy's configured address (its
// `Host` the issuer's), within the provider timeout and MAX_PROVIDER_ANSWER_BYTES; the
// discovery document only gives paths, and its endpoints must be on the issuer's origin, so a
// document cannot send the proxy elsewhere. Discovery is kept DISCOVERY_TTL_MS, a failure
// retried at most every RETRY_MS.
import type { Pool } from 'undici';
import { undiciModule } from '../feature-module.js';
import { parseHostPort, type OidcIR } from '@tollgate/api';

export const MAX_PROVIDER_ANSWER_BYTES = 65_536;
export const DISCOVERY_TTL_MS = 3_600_000;
export const RETRY_MS = 10_000;

/** What went wrong with a provider call; `kind` picks the answer and the metric reason. */
export class ProviderFailure extends Error {
  constructor(
    readonly kind: 'timeout' | 'unavailable' | 'bad_response' | 'grant_refused',
    message: string,
  ) {
    super(message);
  }
}

export interface Discovery {
  readonly authorizationEndpoint: string;
  /** Paths (and query) on the provider's address. */
  readonly tokenPath: string;
  readonly jwksPath: string;
  readonly endSessionEndpoint: string | null;
}

export interface TokenAnswer {
  readonly idToken: string;
  readonly refreshToken: string | null;
}

export class OidcProvider {
  readonly #pool: Pool;
  readonly #origin: string;
  readonly #host: string;
  #discovery: { value: Discovery; at: number } | null = null;
  #failedAt = -Infinity;
  #failure: ProviderFailure | null = null;
  #inflight: Promise<Discovery> | null = null;

  constructor(
    readonly ir: OidcIR,
    readonly clock: () => number,
  ) {
    const tls = ir.provider.tls;
    const host = parseHostPort(ir.provider.address);
    const servername = tls?.hostname ?? (host.ok && host.value.kind === 'dns' ? host.value.host : undefined);
    this.#pool = new (undiciModule().Pool)(`${tls ? 'https' : 'http'}://${ir.provider.address}`, {
      connections: 4,
      keepAliveTimeout: 4_000,
      maxResponseSize: MAX_PROVIDER_ANSWER_BYTES,
      connect: tls ? { ca: tls.ca ?? undefined, servername, rejectUnauthorized: true } : {},
    });
    const issuer = new URL(ir.issuer);
    this.#origin = issuer.origin;
    this.#host = issuer.host;
  }

  /** The discovery document, fetched once and kept; a recent failure is answered again without a call. */
  discovery(): Promise<Discovery> {
    const now = this.clock();
    if (this.#discovery && now - this.#discovery.at < DISCOVERY_TTL_MS) return Promise.resolve(this.#discovery.value);
    if (this.#inflight) return this.#inflight;
    if (this.#failure && now - this.#failedAt < RETRY_MS) return this.#discovery ? Promise.resolve(this.#discovery.value) : Promise.reject(this.#failure);
    const path = `${new URL(this.ir.issuer).pathname.replace(/\/$/, '')}/.well-known/openid-configuration`;
    this.#inflight = this.#call('GET', path, null)
      .then((doc) => this.#readDiscovery(doc))
      .then(
        (value) => {
          this.#discovery = { value, at: this.clock() };
          this.#failure = null;
          return value;
        },
        (err: unknown) => {
          this.#failure = err instanceof ProviderFailure ? err : new ProviderFailure('unavailable', (err as Error).message);
          this.#failedAt = this.clock();
          if (this.#discovery) return this.#discovery.value;
          throw this.#failure;
        },
      )
      .finally(() => {
        this.#inflight = null;
      });
    return this.#inflight;
  }

  /** Exchanges the code (with its PKCE verifier) or a refresh token at the token endpoint. */
  async token(params: Record<string, string>): Promise<TokenAnswer> {
    const d = await this.discovery();
    const form = new URLSearchParams(params);
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (this.ir.clientSecret) {
      // RFC 6749 2.3.1: client_secret_basic, both parts form-encoded first.
      const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
      headers.authorization = `Basic ${Buffer.from(`${enc(this.ir.clientId)}:${enc(this.ir.clientSecret.reveal())}`).toString('base64')}`;
    } else form.set('client_id', this.ir.clientId);
    const doc = await this.#call('POST', d.tokenPath, { headers, body: form.toString() });
    const idToken = doc.id_token;
    if (typeof idToken !== 'string' || idToken.length === 0 || idToken.length > 16_384) throw new ProviderFailure('bad_response', 'the token endpoint answered without an id_token');
    const refresh = doc.refresh_token;
    return { idToken, refreshToken: typeof refresh === 'string' && refresh.length > 0 && refresh.length <= 4096 ? refresh : null };
  }

  /** The JWKS path on the provider's address (for the shared key set store). */
  async jwksPath(): Promise<string> {
    return (await this.discovery()).jwksPath;
  }

  async close(): Promise<void> {
    await this.#pool.destroy();
  }

  #readDiscovery(doc: Record<string, unknown>): Discovery {
    if (doc.issuer !== this.ir.issuer) throw new ProviderFailure('bad_response', `the discovery document names issuer ${JSON.stringify(String(doc.issuer).slice(0, 200))}, not ${this.ir.issuer}`);
    const url = (field: string, required: boolean, sameOrigin: boolean): URL | null => {
      const v = doc[field];
      if (v === undefined && !required) return null;
      let u: URL;
      try {
        if (typeof v !== 'string' || v.length > 2048) throw new Error();
        u = new URL(v);
      } catch {
        throw new ProviderFailure('bad_response', `the discovery document's ${field} is not a URL`);
      }
      if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new ProviderFailure('bad_response', `the discovery document's ${field} is not an http(s) URL`);
      if (sameOrigin && u.origin !== this.#origin) throw new ProviderFailure('bad_response', `the discovery document's ${field} is on ${u.origin}, not on the issuer's origin ${this.#origin}; the proxy calls the provider at its configured address only`);
      return u;
    };
    const methods = doc.code_challenge_methods_supported;
    if (Array.isArray(methods) && !methods.includes('S256')) throw new ProviderFailure('bad_response', 'the provider does not support PKCE with S256 (code_challenge_methods_supported)');
    const token = url('token_endpoint', true, true)!;
    const jwks = url('jwks_uri', true, true)!;
    return {
      authorizationEndpoint: url('authorization_endpoint', true, false)!.href,
      tokenPath: token.pathname + token.search,
      jwksPath: jwks.pathname + jwks.search,
      endSessionEndpoint: url('end_session_endpoint', false, false)?.href ?? null,
    };
  }

  async #call(method: 'GET' | 'POST', path: string, send: { headers: Record<string, string>; body: string } | null): Promise<Record<string, unknown>> {
    const timeoutMs = this.ir.provider.timeoutMs;
    const signal = AbortSignal.timeout(timeoutMs);
    let status: number;
    let text: string;
    try {
      const res = await this.#pool.request({
        method,
        path,
        headers: { host: this.#host, accept: 'application/json', ...send?.headers },
        body: send?.body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal,
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (signal.aborted || /TIMEOUT/.test(e.code ?? '')) throw new ProviderFailure('timeout', `the provider did not answer ${method} ${path} within ${timeoutMs} ms`);
      if (e.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') throw new ProviderFailure('bad_response', `the provider's answer to ${method} ${path} is more than ${MAX_PROVIDER_ANSWER_BYTES} bytes`);
      throw new ProviderFailure('unavailable', `the provider could not be reached (${e.code ?? e.message})`);
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      doc = null;
    }
    const isObject = doc !== null && typeof doc === 'object' && !Array.isArray(doc);
    if (status === 400 || status === 401) {
      const error = isObject ? (doc as Record<string, unknown>).error : undefined;
      const code = typeof error === 'string' ? error.slice(0, 64).replace(/[^\x21-\x7e]/g, '?') : '';
      throw new ProviderFailure('grant_refused', `the provider refused the grant (${status}${code ? ` ${code}` : ''})`);
    }
    if (status !== 200) throw new ProviderFailure(status >= 500 ? 'unavailable' : 'bad_response', `the provider answered ${method} ${path} with ${status}`);
    if (!isObject) throw new ProviderFailure('bad_response', `the provider's answer to ${method} ${path} is not a JSON object`);
    return doc as Record<string, unknown>;
  }
}
