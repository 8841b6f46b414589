// oidc as a check: the callback and logout paths are answered here; any other request passes
// with a valid session cookie (its ID token verified by the jwt kind's verifier and key set
// store, so the claims are the consumer's exactly as a jwt's are), is refreshed with the
// refresh token when the ID token has expired, and otherwise is sent to the provider's login
// page (a browser: Accept text/html) or refused with 401 (anything else). The redirects (login,
// callback done, logout) are denials with status 302 and their own reason for metrics and traces.
import { createHash, randomBytes } from 'node:crypto';
import type { JwtIR, OidcIR } from '@tollgate/api';
import { ERRORS } from '../errors.js';
import type { JwksStore } from './jwks-store.js';
import { compileJwt } from './jwt.js';
import { chunk, CookieSealer, cookiesWithout, readCookies, setCookie, unchunk } from './oidc-cookie.js';
import { OidcProvider, ProviderFailure, type Discovery } from './oidc-provider.js';
import type { AuthCheck, AuthDenial, AuthPass, AuthReason, AuthRequest, AuthVerdict, Consumer } from './types.js';

/** How long a login may take from the redirect to the callback. */
export const LOGIN_STATE_MS = 600_000;
/** Longest return path kept in the login cookie (a longer one returns to /). */
export const MAX_RETURN_PATH = 1024;
/** Longest login cookie read: its state, nonce and verifier and a return path of MAX_RETURN_PATH, sealed. */
const MAX_STATE_COOKIE = 4096;
const ID_TOKEN_HEADER = 'x-tollgate-oidc-id-token';
/**
 * Sessions whose cookie was opened and whose ID token verified, kept per policy so that the next
 * request with the same cookie costs a lookup instead of a decryption and a token check. Keyed by
 * the sealed text itself (only a value sealed with the policy's key can ever be stored), bounded in
 * count (the oldest goes first) and in length (a longer cookie is opened every time), and each kept
 * at most SESSION_RECHECK_MS: the ID token is checked again after that, so a signing key the
 * provider withdrew stops being honoured within it.
 */
export const MAX_VERIFIED_SESSIONS = 4096;
export const MAX_CACHED_SESSION_LENGTH = 4096;
export const SESSION_RECHECK_MS = 60_000;

interface VerifiedSession {
  readonly verdict: AuthPass;
  /** The earliest of the session's end, the ID token's exp (with the clock skew) and the recheck time, in ms. */
  readonly untilMs: number;
}

interface Session {
  /** ID token. */
  readonly i: string;
  /** Refresh token, or null. */
  readonly r: string | null;
  /** Session end, ms since the epoch (cookie.maxAge from login). */
  readonly e: number;
}

interface LoginState {
  readonly s: string;
  readonly n: string;
  readonly v: string;
  readonly r: string;
  readonly e: number;
}

export function compileOidc(ir: OidcIR, deps: { readonly jwks: JwksStore; readonly clock: () => number }): AuthCheck {
  const check = new OidcCheck(ir, deps);
  return { kind: 'oidc', needsBody: false, run: (req) => check.run(req) };
}

class OidcCheck {
  readonly #provider: OidcProvider;
  readonly #sealer: CookieSealer;
  readonly #stateName: string;
  #verifier: { readonly path: string; readonly check: AuthCheck } | null = null;
  readonly #verified = new Map<string, VerifiedSession>();

  constructor(
    readonly ir: OidcIR,
    readonly deps: { readonly jwks: JwksStore; readonly clock: () => number },
  ) {
    this.#provider = new OidcProvider(ir, deps.clock);
    this.#sealer = new CookieSealer(ir.sessionKey.reveal());
    this.#stateName = `${ir.cookie.name}.state`;
    // The first login should not wait for discovery.
    this.#provider.discovery().catch(() => undefined);
  }

  async run(req: AuthRequest): Promise<AuthVerdict> {
    try {
      if (req.path === this.ir.redirectPath) return await this.#callback(req);
      if (req.path === this.ir.logoutPath) return await this.#logout(req);
      return await this.#session(req);
    } catch (err) {
      if (err instanceof ProviderFailure) return providerDenial(err);
      throw err;
    }
  }

  async #session(req: AuthRequest): Promise<AuthVerdict> {
    const { name, maxChunks } = this.ir.cookie;
    const cookies = readCookies(cookieHeader(req), name, maxChunks + 1);
    const text = unchunk(cookies, name, maxChunks);
    if (text === null) return this.#unauthenticated(req, 'no session cookie', []);
    const known = this.#verified.get(text);
    if (known) {
      if (known.untilMs > this.deps.clock()) return this.#pass(req, known.verdict, null);
      this.#verified.delete(text);
    }
    const session = this.#openSession(text);
    if (typeof session === 'string') return this.#unauthenticated(req, session, this.#clearSession(cookies));
    const verdict = await this.#verify(session.i);
    if (verdict.ok) {
      this.#remember(text, session, verdict);
      return this.#pass(req, verdict, null);
    }
    if (verdict.reason === 'expired' && session.r) {
      const fresh = await this.#refresh(session).catch((err: unknown) => {
        if (err instanceof ProviderFailure && err.kind === 'grant_refused') return null;
        throw err;
      });
      if (fresh && fresh.verdict.ok) return this.#pass(req, fresh.verdict, fresh.cookies);
      return this.#unauthenticated(req, 'the session expired and the provider refused to refresh it', this.#clearSession(cookies));
    }
    return this.#unauthenticated(req, `the session's ID token is no longer valid: ${verdict.detail}`, this.#clearSession(cookies));
  }

  #remember(text: string, session: Session, verdict: AuthPass): void {
    if (text.length > MAX_CACHED_SESSION_LENGTH) return;
    // The consumer's claims are the token's top-level ones as strings; exp is required by the verifier.
    const exp = Number(verdict.consumer?.claims?.exp);
    if (!Number.isFinite(exp)) return;
    const untilMs = Math.min(session.e, exp * 1000 + this.ir.clockSkewMs, this.deps.clock() + SESSION_RECHECK_MS);
    this.#verified.set(text, { verdict, untilMs });
    if (this.#verified.size > MAX_VERIFIED_SESSIONS) this.#verified.delete(this.#verified.keys().next().value!);
  }

  #openSession(text: string): Session | string {
    const { maxChunks } = this.ir.cookie;
    const s = this.#sealer.open(this.ir.cookie.name, text, maxChunks * 3800);
    if (s === null) return 'the session cookie is not valid (tampered with, truncated, over its size, or sealed with another key)';
    const v = s as Partial<Session>;
    if (typeof v.i !== 'string' || typeof v.e !== 'number' || (v.r !== null && typeof v.r !== 'string')) return 'the session cookie is not valid';
    if (v.e <= this.deps.clock()) return 'the session has ended (cookie.maxAge)';
    return v as Session;
  }

  async #refresh(session: Session): Promise<{ verdict: AuthVerdict; cookies: string[] } | null> {
    const answer = await this.#provider.token({ grant_type: 'refresh_token', refresh_token: session.r! });
    const verdict = await this.#verify(answer.idToken);
    if (!verdict.ok) return { verdict, cookies: [] };
    const cookies = this.#sessionCookies({ i: answer.idToken, r: answer.refreshToken ?? session.r, e: session.e });
    return cookies ? { verdict, cookies } : null;
  }

  #pass(req: AuthRequest, verdict: AuthPass, setCookies: string[] | null): AuthPass {
    const c = verdict.consumer!;
    const consumer: Consumer = { ...c, via: 'oidc', credentialId: `oidc:${this.ir.clientId}` };
    // The backend gets the request's other cookies, never the session.
    const rest = cookiesWithout(cookieHeader(req), this.ir.cookie.name);
    return {
      ok: true,
      consumer,
      ...(rest === null ? { removeHeaders: ['cookie'] } : { setHeaders: { cookie: rest } }),
      ...(setCookies ? { responseHeaders: { 'set-cookie': setCookies } } : {}),
      note: setCookies ? 'session refreshed' : 'session',
    };
  }

  /** A browser goes to the login page; anything else gets 401. */
  async #unauthenticated(req: AuthRequest, why: string, clear: string[]): Promise<AuthVerdict> {
    const accept = String(req.headers.accept ?? '');
    if (!(req.method === 'GET' || req.method === 'HEAD') || !/\btext\/html\b/i.test(accept)) {
      return { ok: false, error: ERRORS.oidcLoginRequired, reason: clear.length ? 'invalid' : 'missing', detail: `${why}; log in in a browser`, ...(clear.length ? { headers: { 'set-cookie': clear } } : {}) };
    }
    const d = await this.#provider.discovery();
    const state: LoginState = { s: random(), n: random(), v: random(), r: returnPath(req), e: this.deps.clock() + LOGIN_STATE_MS };
    const url = new URL(d.authorizationEndpoint);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', this.ir.clientId);
    url.searchParams.set('redirect_uri', this.#redirectUri(req));
    url.searchParams.set('scope', this.ir.scopes.join(' '));
    url.searchParams.set('state', state.s);
    url.searchParams.set('nonce', state.n);
    url.searchParams.set('code_challenge', createHash('sha256').update(state.v).digest('base64url'));
    url.searchParams.set('code_challenge_method', 'S256');
    const cookie = setCookie(this.#stateName, this.#sealer.seal(this.#stateName, state), LOGIN_STATE_MS / 1000);
    return redirect(url.href, 'login', `${why}: sent to the provider's login`, [...clear, cookie]);
  }

  async #callback(req: AuthRequest): Promise<AuthVerdict> {
    const q = new URLSearchParams(req.query);
    const clearState = setCookie(this.#stateName, '', 0);
    const fail = (reason: AuthReason, detail: string): AuthDenial => ({ ok: false, error: ERRORS.oidcCallbackFailed, reason, detail, headers: { 'set-cookie': [clearState] } });
    const providerError = q.get('error');
    if (providerError !== null) return fail('grant_refused', `the provider answered error ${JSON.stringify(providerError.slice(0, 64).replace(/[^\x20-\x7e]/g, '?'))}`);
    const cookies = readCookies(cookieHeader(req), this.#stateName, 1);
    const raw = cookies.get(this.#stateName);
    const opened = raw === undefined ? null : (this.#sealer.open(this.#stateName, raw, MAX_STATE_COOKIE) as Partial<LoginState> | null);
    if (!opened || typeof opened.s !== 'string' || typeof opened.n !== 'string' || typeof opened.v !== 'string' || typeof opened.r !== 'string' || typeof opened.e !== 'number') {
      return fail('bad_state', raw === undefined ? 'no login cookie: start the login from the route (cookies blocked, or another browser?)' : 'the login cookie is not valid (tampered with, or sealed with another key)');
    }
    if (opened.e <= this.deps.clock()) return fail('bad_state', 'the login took longer than 10 minutes; start it again');
    if (q.get('state') !== opened.s) return fail('bad_state', 'the callback\'s state is not the login\'s (an old tab, or a forged callback)');
    const code = q.get('code');
    if (!code || code.length > 4096) return fail('malformed', 'the callback has no code');
    let answer;
    try {
      answer = await this.#provider.token({ grant_type: 'authorization_code', code, redirect_uri: this.#redirectUri(req), code_verifier: opened.v });
    } catch (err) {
      if (err instanceof ProviderFailure && err.kind === 'grant_refused') return fail('grant_refused', `${err.message}: a code is good once and for a short time`);
      throw err;
    }
    const verdict = await this.#verify(answer.idToken);
    if (!verdict.ok) return fail(verdict.reason, `the provider's ID token does not verify: ${verdict.detail}`);
    if (verdict.consumer?.claims?.nonce !== opened.n) return fail('bad_nonce', 'the ID token\'s nonce is not the login\'s');
    const session = this.#sessionCookies({ i: answer.idToken, r: answer.refreshToken, e: this.deps.clock() + this.ir.cookie.maxAgeMs });
    if (!session) return fail('too_large', `the session is more than cookie.maxChunks (${this.ir.cookie.maxChunks}) cookies; raise it or ask for fewer scopes`);
    return redirect(opened.r, 'logged_in', `logged in as ${verdict.consumer.name}`, [clearState, ...session]);
  }

  async #logout(req: AuthRequest): Promise<AuthVerdict> {
    const cookies = readCookies(cookieHeader(req), this.ir.cookie.name, this.ir.cookie.maxChunks + 1);
    const clear = this.#clearSession(cookies);
    if (!clear.length) clear.push(setCookie(this.ir.cookie.name, '', 0));
    const back = `${req.scheme}://${req.authority}${this.ir.postLogoutPath}`;
    let target = this.ir.postLogoutPath;
    const d = await this.#provider.discovery().catch((): Discovery | null => null);
    if (d?.endSessionEndpoint) {
      const url = new URL(d.endSessionEndpoint);
      url.searchParams.set('client_id', this.ir.clientId);
      url.searchParams.set('post_logout_redirect_uri', back);
      target = url.href;
    }
    return redirect(target, 'logged_out', 'session cookie cleared', clear);
  }

  /** The ID token checked by the jwt verifier over the provider's key set (fetched once its path is known). */
  async #verify(idToken: string): Promise<AuthVerdict> {
    const path = await this.#provider.jwksPath();
    if (this.#verifier?.path !== path) this.#verifier = { path, check: compileJwt(this.#jwtIR(path), this.deps) };
    const req: AuthRequest = {
      method: 'GET',
      path: '/',
      query: '',
      host: '',
      authority: '',
      scheme: 'https',
      headers: { [ID_TOKEN_HEADER]: idToken },
      rawHeaders: [ID_TOKEN_HEADER, idToken],
      sourceAddress: '',
      sourcePort: 0,
      consumer: null,
      model: null,
      body: null,
      bodyTooLarge: false,
    };
    return this.#verifier.check.run(req);
  }

  #jwtIR(jwksPath: string): JwtIR {
    const { ir } = this;
    return {
      providers: [
        {
          name: 'oidc',
          issuer: ir.issuer,
          audiences: ir.audiences,
          keys: { kind: 'remote', address: ir.provider.address, path: jwksPath, tls: ir.provider.tls, cacheMs: 300_000, timeoutMs: ir.provider.timeoutMs },
          clockSkewMs: ir.clockSkewMs,
          tokenFrom: [{ type: 'Header', name: ID_TOKEN_HEADER, prefix: null }],
          consumerClaim: ir.consumerClaim,
          groupClaim: ir.groupClaim,
          claimsToHeaders: [],
          forwardToken: true,
        },
      ],
      mode: 'Strict',
      maxTokenLength: 16_384,
    };
  }

  #sessionCookies(session: Session): string[] | null {
    const { name, maxChunks, maxAgeMs } = this.ir.cookie;
    const chunks = chunk(name, this.#sealer.seal(name, session), maxChunks);
    if (!chunks) return null;
    const maxAgeS = Math.min(maxAgeMs, session.e - this.deps.clock()) / 1000;
    const out = chunks.map(([n, v]) => setCookie(n, v, maxAgeS));
    // Chunks a longer session left behind.
    for (let i = chunks.length; i < maxChunks; i++) out.push(setCookie(`${name}.${i}`, '', 0));
    return out;
  }

  #clearSession(cookies: ReadonlyMap<string, string>): string[] {
    return [...cookies.keys()].filter((n) => n !== this.#stateName).map((n) => setCookie(n, '', 0));
  }

  #redirectUri(req: AuthRequest): string {
    return `${req.scheme}://${req.authority}${this.ir.redirectPath}`;
  }
}

function cookieHeader(req: AuthRequest): string | undefined {
  const c = req.headers.cookie;
  return Array.isArray(c) ? c.join('; ') : c;
}

function random(): string {
  return randomBytes(32).toString('base64url');
}

/** Where the browser returns after login: the request's own path and query, when short enough and on this host. */
function returnPath(req: AuthRequest): string {
  const target = req.query ? `${req.path}?${req.query}` : req.path;
  return target.length <= MAX_RETURN_PATH && target.startsWith('/') && !target.startsWith('//') ? target : '/';
}

function redirect(location: string, reason: AuthReason, detail: string, cookies: string[]): AuthDenial {
  return { ok: false, error: ERRORS.oidcLoginRequired, status: 302, reason, detail, headers: { location, 'set-cookie': cookies, 'cache-control': 'no-store' } };
}

function providerDenial(err: ProviderFailure): AuthDenial {
  if (err.kind === 'bad_response') return { ok: false, error: ERRORS.oidcProviderError, reason: 'bad_response', detail: err.message };
  if (err.kind === 'grant_refused') return { ok: false, error: ERRORS.oidcCallbackFailed, reason: 'grant_refused', detail: err.message };
  return { ok: false, error: ERRORS.oidcProviderUnavailable, reason: err.kind === 'timeout' ? 'timeout' : 'unavailable', detail: err.message, headers: { 'retry-after': '10' } };
}
