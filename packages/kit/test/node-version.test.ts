import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MIN_NODE_MAJOR, nodeTooOld } from '../src/node-version.js';

describe('nodeTooOld', () => {
  it("is the repository's engines release", () => {
    const engines = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }).engines.node;
    expect(engines).toBe(`>=${MIN_NODE_MAJOR}.0.0`);
  });

  it('lets the supported release and later ones run', () => {
    expect(nodeTooOld('tollgate', `${MIN_NODE_MAJOR}.0.0`)).toBeNull();
    expect(nodeTooOld('tollgate', `${MIN_NODE_MAJOR}.12.1`)).toBeNull();
    expect(nodeTooOld('tollgate', `${MIN_NODE_MAJOR + 1}.0.0-pre`)).toBeNull();
    expect(nodeTooOld('tollgate')).toBeNull(); // the Node running this test
  });

  it('names the program, the release it found and the one it needs for an older or unreadable version', () => {
    expect(nodeTooOld('tollgate', '20.20.2')).toBe(
      `tollgate: needs Node.js ${MIN_NODE_MAJOR} or newer; this is 20.20.2 (${process.execPath}). Run it with Node.js ${MIN_NODE_MAJOR}: \`. scripts/env.sh\` in a checkout puts the repository's Node first on PATH.`,
    );
    expect(nodeTooOld('gwctl', `${MIN_NODE_MAJOR - 1}.9.9`)).toMatch(/^gwctl: needs Node\.js \d+ or newer; this is \d+\.9\.9 /);
    expect(nodeTooOld('mock-llm', 'unknown')).toMatch(/^mock-llm: needs Node\.js/);
  });
});
