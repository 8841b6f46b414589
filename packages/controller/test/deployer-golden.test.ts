// Golden tests of the deployer's render(): testdata/deployer/<case>.in.yaml (one Gateway, read
// strictly, and optional first lines `# params: {...}` changing the render parameters,
// `# gatewayImages: [...]` the images Gateways may choose, --gateway-proxy-images, and
// `# infrastructureDenied: [...]`, --gateway-infrastructure-denied-domains) to
// testdata/deployer/<case>.out.yaml (the objects and the problems reported). The proxy
// parameters are resolved first (parameters.ts) from the GatewayClass and ConfigMaps the case
// holds, if any; the output starts with that verdict when the case holds them or the Gateway is
// refused. UPDATE_GOLDEN=1 rewrites the outputs.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { V1ConfigMap } from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseAllowList } from '../src/proxy-settings/image-policy.js';
import { gatewayParameters, type ParametersVerdict } from '../src/proxy-settings/parameters.js';
import { DEFAULT_PROXY_SETTINGS } from '../src/proxy-settings/defaults.js';
import { render, type RenderParams } from '../src/deployer/render.js';
import { parseObject } from '../src/types/schemas.js';
import type { Gateway, GatewayClass } from '../src/types/gateway-api.js';

const dir = fileURLToPath(new URL('../testdata/deployer/', import.meta.url));
const cases = readdirSync(dir)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();
const update = process.env.UPDATE_GOLDEN === '1';

export const PARAMS: RenderParams = {
  proxyImage: 'ghcr.io/tollgate-dev/tollgate:0.1.0',
  snapshotService: 'tollgate-controller.tollgate-system.svc:9978',
  defaults: DEFAULT_PROXY_SETTINGS,
};

function readCase(name: string): { gateway: Gateway; params: RenderParams; parameters?: ParametersVerdict } {
  const text = readFileSync(`${dir}${name}.in.yaml`, 'utf8');
  let gateway: Gateway | undefined;
  let gatewayClass: GatewayClass | undefined;
  const configMaps: V1ConfigMap[] = [];
  parseAllDocuments(text, { uniqueKeys: true, strict: true }).forEach((doc, i) => {
    if (doc.errors.length) throw new Error(`${name}.in.yaml document ${i}: ${doc.errors.map((e) => e.message).join('; ')}`);
    if (doc.toJS() === null) return;
    const o = parseObject(doc.toJS(), `${name}.in.yaml document ${i}`);
    if (o.kind === 'Gateway' && !gateway) gateway = o.object;
    else if (o.kind === 'GatewayClass' && !gatewayClass) gatewayClass = o.object;
    else if (o.kind === 'ConfigMap') configMaps.push(o.object);
    else throw new Error(`${name}.in.yaml document ${i} holds a ${o.kind}; a deployer case is one Gateway, its GatewayClass and ConfigMaps`);
  });
  if (!gateway) throw new Error(`${name}.in.yaml holds no Gateway`);
  const header = (key: string) => {
    const m = new RegExp(`^# ${key}: (.*)$`).exec(text.split('\n').find((l) => l.startsWith(`# ${key}: `)) ?? '');
    return m ? (JSON.parse(m[1]!) as unknown) : undefined;
  };
  const params: RenderParams = { ...PARAMS, ...((header('params') as Partial<RenderParams> | undefined) ?? {}) };
  const allowList = parseAllowList((header('gatewayImages') as string[] | undefined) ?? []);
  if (!allowList.ok) throw new Error(`${name}.in.yaml: gatewayImages: ${allowList.problem}`);
  const lookup = (ns: string, n: string) => configMaps.find((c) => c.metadata?.namespace === ns && c.metadata.name === n && c.metadata.labels?.['tollgate.dev/parameters'] !== undefined);
  const denied = header('infrastructureDenied') as string[] | undefined;
  const parameters = gatewayParameters(gateway, gatewayClass, lookup, { defaults: params.defaults, gatewayImages: allowList.list, ...(denied ? { infrastructureDenied: denied } : {}) });
  const resolved = { gateway, params: parameters.ok ? { ...params, defaults: parameters.settings } : params };
  return gatewayClass || configMaps.length || !parameters.ok ? { ...resolved, parameters } : resolved;
}

describe('deployer render golden cases', () => {
  it('has the cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(8);
  });

  for (const name of cases) {
    it(name, () => {
      const { gateway, params, parameters } = readCase(name);
      // A Gateway refused for its parameters is not rendered (its proxies stay as they run).
      const result = parameters ? (parameters.ok ? { parameters, ...render(gateway, params) } : { parameters }) : render(gateway, params);
      const out = stringify(result, { lineWidth: 0, aliasDuplicateObjects: false });
      const file = `${dir}${name}.out.yaml`;
      if (update || !existsSync(file)) {
        if (!update) throw new Error(`deployer/${name}.out.yaml is missing; run with UPDATE_GOLDEN=1 to write it`);
        writeFileSync(file, out);
        return;
      }
      expect(out).toBe(readFileSync(file, 'utf8'));
    });
  }
});
