// The curl-style arguments of inject mode.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCurlArgs } from '../src/curl-args.js';
import { GwctlError } from '../src/errors.js';

async function file(content: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gwctl-curl-'));
  const f = join(dir, 'body');
  await writeFile(f, content);
  return f;
}

async function failure(args: string[]): Promise<GwctlError> {
  try {
    await parseCurlArgs(args);
  } catch (err) {
    if (err instanceof GwctlError) return err;
    throw err;
  }
  throw new Error('expected a failure');
}

describe('parseCurlArgs', () => {
  it('a bare URL is a GET with curl-like defaults', async () => {
    const r = await parseCurlArgs(['http://api.example.com:8080/v1/models?a=b']);
    expect(r.method).toBe('GET');
    expect(r.url.host).toBe('api.example.com:8080');
    expect(r.url.pathname + r.url.search).toBe('/v1/models?a=b');
    expect(r.headers).toEqual([['user-agent', 'gwctl'], ['accept', '*/*']]);
    expect(r.body).toBeUndefined();
    expect(r.include).toBe(false);
  });

  it('a URL without scheme is http', async () => {
    expect((await parseCurlArgs(['api.example.com/x'])).url.href).toBe('http://api.example.com/x');
  });

  it('-X, -H (also glued), -A and -i', async () => {
    const r = await parseCurlArgs(['-XDELETE', 'http://h/x', '-H', 'X-A: 1', '-HX-B:2', '--header=x-c: three', '-A', 'me/1', '-i', '-s']);
    expect(r.method).toBe('DELETE');
    expect(r.headers).toEqual([['x-a', '1'], ['x-b', '2'], ['x-c', 'three'], ['user-agent', 'me/1'], ['accept', '*/*']]);
    expect(r.include).toBe(true);
  });

  it('-d implies POST and a form content type; several -d join with &', async () => {
    const r = await parseCurlArgs(['http://h/', '-d', 'a=1', '--data', 'b=2']);
    expect(r.method).toBe('POST');
    expect(r.body?.toString()).toBe('a=1&b=2');
    expect(r.headers).toContainEqual(['content-type', 'application/x-www-form-urlencoded']);
  });

  it('-d @file drops newlines, --data-binary @file keeps them, --data-raw does not read files', async () => {
    const f = await file('line1\nline2\r\n');
    expect((await parseCurlArgs(['http://h/', '-d', `@${f}`])).body?.toString()).toBe('line1line2');
    expect((await parseCurlArgs(['http://h/', '--data-binary', `@${f}`])).body?.toString()).toBe('line1\nline2\r\n');
    expect((await parseCurlArgs(['http://h/', '--data-raw', `@${f}`])).body?.toString()).toBe(`@${f}`);
  });

  it('--json sets the JSON content type and accept unless given, reads @file', async () => {
    const f = await file('{"a":1}\n');
    const r = await parseCurlArgs(['http://h/', '--json', `@${f}`]);
    expect(r.method).toBe('POST');
    expect(r.body?.toString()).toBe('{"a":1}\n');
    expect(r.headers).toEqual([['content-type', 'application/json'], ['accept', 'application/json'], ['user-agent', 'gwctl']]);
    const own = await parseCurlArgs(['http://h/', '-H', 'content-type: application/vnd.x+json', '--json', '{}', '-X', 'PUT']);
    expect(own.method).toBe('PUT');
    expect(own.headers.filter(([n]) => n === 'content-type')).toEqual([['content-type', 'application/vnd.x+json']]);
  });

  it('refuses what it does not understand, each as a usage error (exit 2)', async () => {
    const cases: [string[], RegExp][] = [
      [[], /needs a URL after --/],
      [['http://h/', '--compressed'], /unsupported curl argument '--compressed'/],
      [['http://h/', 'http://other/'], /only one URL/],
      [['http://h/', '-H'], /-H needs a value/],
      [['http://h/', '-H', 'no-colon'], /-H needs 'Name: value'/],
      [['ftp://h/x'], /must be http:\/\/ or https:\/\//],
      [['http://h/', '-X', 'GE T'], /-X needs an HTTP method/],
      [['http://h/', '-d', '@-'], /stdin/],
    ];
    for (const [args, re] of cases) {
      const err = await failure(args);
      expect(err.exitCode, args.join(' ')).toBe(2);
      expect(err.message).toMatch(re);
    }
  });

  it('a missing @file is an input error (exit 9)', async () => {
    const err = await failure(['http://h/', '-d', '@/nonexistent/body.json']);
    expect(err.exitCode).toBe(9);
    expect(err.message).toMatch(/^cannot read request body file \/nonexistent\/body\.json: ENOENT/);
  });
});
