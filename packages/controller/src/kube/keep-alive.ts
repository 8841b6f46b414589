// A KubeConfig whose requests share keep-alive connections. @kubernetes/client-node (1.x) makes
// a new https.Agent for every request, so every status write, apply and event opened its own
// TLS connection: measured, about a third of the controller's CPU under a stream of changes
// went to TLS setup (secure contexts, CA parsing, handshakes), on the event loop that also
// translates. Here each request's agent is swapped for one kept per set of TLS settings; the
// settings (CA, client certificate, key, server name) are what the library put in the agent
// it made, so credentials that change (a rotated client certificate) get a new agent.
import { createHash } from 'node:crypto';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';

type RequestContext = Parameters<KubeConfig['applySecurityAuthentication']>[0];
type HttpsOptions = Parameters<KubeConfig['applyToHTTPSOptions']>[0];

/** Agents kept at most (a new set of TLS settings beyond this drops the oldest). */
const MAX_AGENTS = 4;

export class KeepAliveKubeConfig extends KubeConfig {
  readonly #agents = new Map<string, https.Agent>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const made = context.getAgent();
    if (made instanceof https.Agent) context.setAgent(this.#shared(made));
  }

  // Watches (and other fetch-based calls) take their agent here.
  override async applyToHTTPSOptions(opts: HttpsOptions): Promise<void> {
    await super.applyToHTTPSOptions(opts);
    const o = opts as https.RequestOptions;
    if (o.agent instanceof https.Agent) o.agent = this.#shared(o.agent);
  }

  /** How many distinct agents requests were given (tests). */
  get agentCount(): number {
    return this.#agents.size;
  }

  #shared(made: https.Agent): https.Agent {
    // A proxy agent (hpagent, socks) subclasses http(s).Agent with its own connect: keep it.
    if (made.constructor !== https.Agent) return made;
    const key = settingsKey(made.options);
    let agent = this.#agents.get(key);
    if (!agent) {
      agent = new https.Agent({ ...made.options, keepAlive: true });
      this.#agents.set(key, agent);
      if (this.#agents.size > MAX_AGENTS) {
        // Requests in flight on the oldest agent finish; its idle sockets close with it.
        const [oldest, old] = this.#agents.entries().next().value as [string, https.Agent];
        this.#agents.delete(oldest);
        old.destroy();
      }
    }
    made.destroy();
    return agent;
  }
}

function settingsKey(o: https.AgentOptions): string {
  const h = createHash('sha256');
  for (const k of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'servername', 'rejectUnauthorized'] as const) {
    const v = o[k];
    h.update(k).update('\0');
    if (v !== undefined) h.update(Array.isArray(v) ? v.map(String).join('\n') : typeof v === 'object' && !Buffer.isBuffer(v) ? JSON.stringify(v) : String(v));
    h.update('\0');
  }
  return h.digest('hex');
}
