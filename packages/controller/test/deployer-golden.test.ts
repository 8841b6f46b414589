// Golden tests of the deployer's render(): testdata/deployer/<case>.in.yaml (one Gateway, read
// strictly, and an optional first line `# params: {...}` changing the parameters) to
// testdata/deployer/<case>.out.yaml (the objects and the problems reported). UPDATE_GOLDEN=1
// rewrites the outputs.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseDocument, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PROXY_SETTINGS, render, type RenderParams } from '../src/deployer/render.js';
import { parseObject } from '../src/types/schemas.js';
import type { Gateway } from '../src/types/gateway-api.js';

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

function readCase(name: string): { gateway: Gateway; params: RenderParams } {
  const text = readFileSync(`${dir}${name}.in.yaml`, 'utf8');
  const doc = parseDocument(text, { uniqueKeys: true, strict: true });
  if (doc.errors.length) throw new Error(`${name}.in.yaml: ${doc.errors.map((e) => e.message).join('; ')}`);
  const o = parseObject(doc.toJS(), `${name}.in.yaml`);
  if (o.kind !== 'Gateway') throw new Error(`${name}.in.yaml holds a ${o.kind}; a deployer case is one Gateway`);
  const m = /^# params: (.*)$/m.exec(text.split('\n')[0] ?? '');
  return { gateway: o.object, params: { ...PARAMS, ...(m ? (JSON.parse(m[1]!) as Partial<RenderParams>) : {}) } };
}

describe('deployer render golden cases', () => {
  it('has the cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(8);
  });

  for (const name of cases) {
    it(name, () => {
      const { gateway, params } = readCase(name);
      const out = stringify(render(gateway, params), { lineWidth: 0, aliasDuplicateObjects: false });
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
