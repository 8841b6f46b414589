// The allow-list of images a Gateway may choose (--gateway-proxy-images): entries match on
// whole path components after the normalisation container runtimes apply, so a name that only
// starts like an allowed one, another registry whose name starts like it, or a tag or digest
// other than the one listed is refused.
import { describe, expect, it } from 'vitest';
import { describeAllowList, imageAllowed, parseAllowList, parseImage } from '../src/proxy-settings/image-policy.js';

function list(...entries: string[]) {
  const parsed = parseAllowList(entries);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.list;
}

describe('image references', () => {
  it('normalises the way runtimes resolve a name', () => {
    expect(parseImage('tollgate')).toEqual({ domain: 'docker.io', path: 'library/tollgate' });
    expect(parseImage('tollgate-dev/tollgate:0.1.0')).toEqual({ domain: 'docker.io', path: 'tollgate-dev/tollgate', tag: '0.1.0' });
    expect(parseImage('index.docker.io/library/tollgate')).toEqual({ domain: 'docker.io', path: 'library/tollgate' });
    expect(parseImage('Registry.Example.com:5000/a/b@sha256:' + 'a'.repeat(64))).toEqual({ domain: 'registry.example.com:5000', path: 'a/b', digest: 'sha256:' + 'a'.repeat(64) });
    expect(parseImage('localhost/tollgate:dev')).toEqual({ domain: 'localhost', path: 'tollgate', tag: 'dev' });
  });

  it('refuses what is not a reference', () => {
    for (const bad of ['', 'Tollgate', 'registry.example.com/Tollgate', 'a b', 'registry.example.com/x:', 'x@sha256:12', 'registry.example.com/', 'http://registry.example.com/x', 'x'.repeat(513), 'registry..example.com/x', '-registry.example.com/x'])
      expect(parseImage(bad), bad).toBeUndefined();
  });
});

describe('the allow-list', () => {
  it('a registry prefix allows every repository of that registry, and no other registry', () => {
    const l = list('registry.example.com/');
    expect(imageAllowed('registry.example.com/tollgate:1', l)).toBe(true);
    expect(imageAllowed('REGISTRY.example.com/team/tollgate@sha256:' + '0'.repeat(64), l)).toBe(true);
    for (const other of ['registry.example.com.evil.io/tollgate:1', 'evil.io/registry.example.com/tollgate:1', 'registry.example.co/tollgate', 'registry.example.com:5000/tollgate', 'tollgate'])
      expect(imageAllowed(other, l), other).toBe(false);
  });

  it('a path prefix allows what is under it, not a sibling whose name starts the same', () => {
    const l = list('registry.example.com/canary/');
    expect(imageAllowed('registry.example.com/canary/tollgate:rc1', l)).toBe(true);
    expect(imageAllowed('registry.example.com/canary/team/tollgate', l)).toBe(true);
    for (const other of ['registry.example.com/canary-evil/tollgate', 'registry.example.com/canary', 'registry.example.com/tollgate', 'registry.example.com/x/canary/tollgate'])
      expect(imageAllowed(other, l), other).toBe(false);
  });

  it('a repository allows its tags and digests, not a longer name', () => {
    const l = list('registry.example.com/tollgate');
    expect(imageAllowed('registry.example.com/tollgate', l)).toBe(true);
    expect(imageAllowed('registry.example.com/tollgate:0.2.0', l)).toBe(true);
    expect(imageAllowed('registry.example.com/tollgate@sha256:' + 'f'.repeat(64), l)).toBe(true);
    for (const other of ['registry.example.com/tollgate-evil:1', 'registry.example.com/tollgate/evil:1', 'registry.example.com/tollgatex'])
      expect(imageAllowed(other, l), other).toBe(false);
  });

  it('a tag or a digest allows exactly that', () => {
    const digest = 'sha256:' + '1'.repeat(64);
    const l = list('registry.example.com/tollgate:0.2.0', `registry.example.com/pinned@${digest}`);
    expect(imageAllowed('registry.example.com/tollgate:0.2.0', l)).toBe(true);
    expect(imageAllowed('registry.example.com/pinned@' + digest, l)).toBe(true);
    for (const other of ['registry.example.com/tollgate:0.2.1', 'registry.example.com/tollgate', `registry.example.com/tollgate:0.2.0@sha256:${'2'.repeat(64)}`, `registry.example.com/pinned@sha256:${'2'.repeat(64)}`, 'registry.example.com/pinned:latest'])
      expect(imageAllowed(other, l), other).toBe(false);
  });

  it('Docker Hub names match however they are spelled', () => {
    const l = list('docker.io/library/tollgate');
    expect(imageAllowed('tollgate:1', l)).toBe(true);
    expect(imageAllowed('index.docker.io/library/tollgate', l)).toBe(true);
    expect(imageAllowed('someone/tollgate', l)).toBe(false);
    expect(imageAllowed('tollgate', list('tollgate-dev/'))).toBe(false);
    expect(imageAllowed('tollgate-dev/tollgate', list('tollgate-dev/'))).toBe(true);
  });

  it('is empty by default: nothing is allowed', () => {
    expect(imageAllowed('ghcr.io/tollgate-dev/tollgate:0.1.0', list())).toBe(false);
    expect(describeAllowList(list())).toBe('none');
    expect(describeAllowList(list('registry.example.com/', 'tollgate:1'))).toBe('registry.example.com/, docker.io/library/tollgate:1');
  });

  it('refuses a bad entry by name, and too many entries', () => {
    const bad = parseAllowList(['registry.example.com/', 'Bad Entry']);
    expect(bad.ok ? '' : bad.problem).toContain('"Bad Entry" is not an image reference or prefix');
    const many = parseAllowList(Array.from({ length: 65 }, (_, i) => `r${i}.example.com/`));
    expect(many.ok ? '' : many.problem).toContain('at most 64');
  });
});
