// Golden tests of translate(): testdata/<case>.in.yaml (Kubernetes objects, read strictly) to
// testdata/<case>.out.yaml (snapshots and status). UPDATE_GOLDEN=1 rewrites the outputs.
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { translate } from '../src/translate/index.js';
import { caseOptions, parseResources, renderResult } from './support.js';

const dir = fileURLToPath(new URL('../testdata/', import.meta.url));
const cases = readdirSync(dir)
  .filter((f) => f.endsWith('.in.yaml'))
  .map((f) => f.slice(0, -'.in.yaml'.length))
  .sort();
const update = process.env.UPDATE_GOLDEN === '1';

describe('translate golden cases', () => {
  it('has at least 40 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(40);
  });

  for (const name of cases) {
    it(name, () => {
      const text = readFileSync(`${dir}${name}.in.yaml`, 'utf8');
      const out = renderResult(translate(parseResources(text, `${name}.in.yaml`), caseOptions(text)));
      const file = `${dir}${name}.out.yaml`;
      if (update || !existsSync(file)) {
        if (!update) throw new Error(`${name}.out.yaml is missing; run with UPDATE_GOLDEN=1 to write it`);
        writeFileSync(file, out);
        return;
      }
      expect(out).toBe(readFileSync(file, 'utf8'));
    });
  }
});
