// The curl-style request of inject mode: `<url> [curl args]` after `--`. The URL's host
// becomes the Host header (the request itself always goes to the listener gwctl dials);
// -X, -H, -d/--data/--data-ascii/--data-raw/--data-binary (with @file), --json and -i work
// as in curl. Anything else is refused so that a typo is not silently ignored.
import { readFile } from 'node:fs/promises';
import { GwctlError, describe, usage } from './errors.js';

export interface InjectRequest {
  readonly url: URL;
  readonly method: string;
  /** In the order given; the Host header is added by the sender. */
  readonly headers: [string, string][];
  readonly body: Buffer | undefined;
  /** -i: print the status line and headers before the body. */
  readonly include: boolean;
}

type DataKind = 'data' | 'raw' | 'binary' | 'json';

const WITH_VALUE: Record<string, string> = {
  '-X': 'method',
  '--request': 'method',
  '-H': 'header',
  '--header': 'header',
  '-d': 'data',
  '--data': 'data',
  '--data-ascii': 'data',
  '--data-raw': 'raw',
  '--data-binary': 'binary',
  '--json': 'json',
  '-A': 'agent',
  '--user-agent': 'agent',
};
const FLAGS: Record<string, string> = { '-i': 'include', '--include': 'include', '-s': 'ignore', '--silent': 'ignore', '-S': 'ignore', '--show-error': 'ignore' };

async function dataValue(kind: DataKind, value: string): Promise<Buffer> {
  if (kind === 'raw' || !value.startsWith('@')) return Buffer.from(value);
  const file = value.slice(1);
  if (file === '-') throw usage('reading a request body from stdin (@-) is not supported; give @<file>');
  let content: Buffer;
  try {
    content = await readFile(file);
  } catch (err) {
    throw new GwctlError('TG_GWCTL_INPUT', `cannot read request body file ${file}: ${describe(err)}`, { cause: err });
  }
  // As in curl: -d @file drops carriage returns and newlines; --data-binary and --json keep them.
  return kind === 'data' ? Buffer.from(content.toString('latin1').replace(/[\r\n]/g, ''), 'latin1') : content;
}

export async function parseCurlArgs(args: readonly string[]): Promise<InjectRequest> {
  let url: URL | undefined;
  let method: string | undefined;
  let include = false;
  const headers: [string, string][] = [];
  const data: { kind: DataKind; value: Buffer }[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    let name = arg;
    let value: string | undefined;
    if (arg.startsWith('--') && arg.includes('=')) {
      name = arg.slice(0, arg.indexOf('='));
      value = arg.slice(arg.indexOf('=') + 1);
    } else if (/^-[XHdA]./.test(arg)) {
      name = arg.slice(0, 2);
      value = arg.slice(2);
    }
    if (FLAGS[name] && value === undefined) {
      if (FLAGS[name] === 'include') include = true;
      continue;
    }
    const kind = WITH_VALUE[name];
    if (kind) {
      if (value === undefined) {
        if (i + 1 >= args.length) throw usage(`curl argument ${name} needs a value`);
        value = args[++i]!;
      }
      if (kind === 'method') {
        if (!/^[A-Za-z]+$/.test(value)) throw usage(`-X needs an HTTP method, got '${value}'`);
        method = value.toUpperCase();
      } else if (kind === 'header' || kind === 'agent') {
        const header = kind === 'agent' ? `user-agent: ${value}` : value;
        const colon = header.indexOf(':');
        if (colon <= 0) throw usage(`-H needs 'Name: value', got '${value}'`);
        headers.push([header.slice(0, colon).trim().toLowerCase(), header.slice(colon + 1).trim()]);
      } else {
        data.push({ kind: kind as DataKind, value: await dataValue(kind as DataKind, value) });
      }
      continue;
    }
    if (arg.startsWith('-') && arg !== '-') throw usage(`unsupported curl argument '${arg}' (supported: -X, -H, -d/--data, --data-raw, --data-binary, --json, -A, -i, -s)`);
    if (url) throw usage(`only one URL may follow --, got '${url.href}' and '${arg}'`);
    try {
      url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(arg) ? arg : `http://${arg}`);
    } catch {
      throw usage(`not a URL: '${arg}'`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usage(`the URL must be http:// or https://, got '${arg}'`);
  }
  if (!url) throw usage('inject mode needs a URL after --, e.g. gwctl trace --local --port 3000 -- http://api.example.com/v1/models');

  const has = (n: string) => headers.some(([h]) => h === n);
  let body: Buffer | undefined;
  if (data.length) {
    const json = data.some((d) => d.kind === 'json');
    body = json ? Buffer.concat(data.map((d) => d.value)) : Buffer.concat(data.flatMap((d, i) => (i ? [Buffer.from('&'), d.value] : [d.value])));
    if (json) {
      if (!has('content-type')) headers.push(['content-type', 'application/json']);
      if (!has('accept')) headers.push(['accept', 'application/json']);
    } else if (!has('content-type')) headers.push(['content-type', 'application/x-www-form-urlencoded']);
  }
  if (!has('user-agent')) headers.push(['user-agent', 'gwctl']);
  if (!has('accept')) headers.push(['accept', '*/*']);
  return { url, method: method ?? (body ? 'POST' : 'GET'), headers, body, include };
}
