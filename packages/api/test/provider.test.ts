// A backend's provider in the standalone config, the snapshot's IR and its wire form.
import { describe, expect, it } from 'vitest';
import { decodeSnapshot, encodeSnapshot, standaloneToSnapshot, validateStandaloneConfig, type ProxySnapshot, type StaticBackendIR } from '../src/index.js';
import { cfg, problems, route } from './support.js';

const firstBackend = (s: ProxySnapshot) => s.binds[0]!.listeners[0]!.routes[0]!.backends[0] as StaticBackendIR;
const snapshotOf = (config: unknown) => standaloneToSnapshot(validateStandaloneConfig(config), { kind: 'file', path: 'x.yaml' });
const withProvider = (provider: unknown) => cfg([route({ backends: [{ host: 'api.anthropic.example:443', provider }] })]);

describe('backends[].provider', () => {
  it('accepts each provider type and carries it to the IR and through the wire', () => {
    for (const type of ['OpenAI', 'Anthropic', 'AzureOpenAI', 'OpenAICompatible']) {
      const provider = type === 'AzureOpenAI' ? { type, deployment: 'gpt' } : { type };
      expect(problems(withProvider(provider))).toEqual([]);
      const snapshot = snapshotOf(withProvider(provider));
      expect(firstBackend(snapshot).provider).toMatchObject({ type });
      expect(firstBackend(decodeSnapshot(encodeSnapshot(snapshot))).provider).toEqual(firstBackend(snapshot).provider);
    }
  });

  it('leaves a backend without a provider as it was', () => {
    expect(firstBackend(snapshotOf(cfg([route()])))).not.toHaveProperty('provider');
  });

  it('refuses an unknown type or field, naming it and the values allowed', () => {
    expect(problems(withProvider({ type: 'Gemini' }))).toEqual([expect.stringMatching(/^binds\[0\]\.listeners\[0\]\.routes\[0\]\.backends\[0\]\.provider\.type: .*OpenAI.*Anthropic.*AzureOpenAI.*OpenAICompatible/)]);
    expect(problems(withProvider({}))).toEqual(['binds[0].listeners[0].routes[0].backends[0].provider.type: required field is missing']);
    expect(problems(withProvider({ type: 'Anthropic', typo: 1 }))[0]).toMatch(/provider\.typo: unknown field/);
  });
});
