#!/usr/bin/env node
// `pnpm gwctl:build`: gwctl for users, in two forms, from the compiled workspace (`pnpm build`
// runs first):
//
//   dist/gwctl/gwctl                         one executable ESM file, every dependency inside;
//                                            runs anywhere with Node.js 26 or newer
//   dist/gwctl/tollgate-gwctl-<version>.tgz  the same file as an npm package with a `gwctl` bin
//                                            and no dependencies: npm install -g <tgz> works
//                                            offline
//
// What a bundle must not leave to run time, and how it is handled here:
// - the version: packages/gwctl/package.json's, written into the bundle (__GWCTL_VERSION__,
//   src/version.ts), since no package.json sits beside the file;
// - require() of CommonJS dependencies: an ESM bundle has no `require`; the banner makes one
//   (createRequire), which then only ever loads Node built-ins (checked below);
// - @tollgate/api's lazily loaded libraries (lazy-module.ts: require(specifier) on first use):
//   the bundle gets a lazy-module whose specifiers are written out, so esbuild bundles them;
// - ink: its yoga layout engine is WebAssembly embedded in JavaScript (base64), bundled as
//   is; React DevTools (ink's DEV=true switch, `react-devtools-core`, not installed) is left
//   out; React runs its production build;
// - deprecation warnings: Node.js prints none for code under node_modules, and the bundle is
//   outside it; it prints none either (the banner). `punycode`, Node's deprecated built-in that
//   whatwg-url (under the Kubernetes client) requires, is replaced by the npm package of the
//   same code;
// - optional native add-ons required inside try/catch (ws: bufferutil, utf-8-validate;
//   node-fetch: encoding): absent, as in a plain install; any other module left outside the
//   bundle fails the build.
//
// Options: --out DIR (default dist/gwctl), -h/--help.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire, isBuiltin } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { npmTarball } from './lib/npm-tarball.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const GWCTL = join(ROOT, 'packages/gwctl');
const API_DIST = join(ROOT, 'packages/api/dist');
const NODE_MAJOR = 26;
/** Required inside try/catch by their users, and absent from a plain install too. */
const OPTIONAL_ADDONS = new Set(['bufferutil', 'utf-8-validate', 'encoding']);

const USAGE = `Usage: pnpm gwctl:build [--out DIR]

Builds gwctl for users from the compiled workspace (pnpm build):
  DIR/gwctl                          one executable file; needs only Node.js ${NODE_MAJOR} or newer
  DIR/tollgate-gwctl-<version>.tgz   an npm package of it (npm install -g <tgz>)

Options:
  --out DIR    where to write them (default: dist/gwctl)
  -h, --help   this text
`;

function fail(message, code = 1) {
  process.stderr.write(`gwctl:build: ${message}\n`);
  process.exit(code);
}

function options() {
  try {
    const { values } = parseArgs({ options: { out: { type: 'string' }, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: false });
    if (values.help) {
      process.stdout.write(USAGE);
      process.exit(0);
    }
    return { out: resolve(values.out ?? join(ROOT, 'dist/gwctl')) };
  } catch (err) {
    return fail(`${err.message} (see --help)`, 2);
  }
}

/** The specifiers @tollgate/api loads with lazyModule('<name>'), read from its compiled files. */
function lazySpecifiers() {
  const found = new Set();
  for (const file of readdirSync(API_DIST, { recursive: true })) {
    if (!String(file).endsWith('.js')) continue;
    for (const m of readFileSync(join(API_DIST, String(file)), 'utf8').matchAll(/\blazyModule\(\s*(['"])([^'"]+)\1\s*\)/g)) found.add(m[2]);
  }
  if (!found.size) fail(`found no lazyModule('<name>') call in ${relative(ROOT, API_DIST)}: update scripts/gwctl-build.mjs to how @tollgate/api loads its libraries`);
  return [...found].sort();
}

/** esbuild plugin: the replacements the header lists. */
function bundleFixes() {
  const rootRequire = createRequire(join(ROOT, 'package.json'));
  const specifiers = lazySpecifiers();
  return {
    name: 'gwctl-bundle-fixes',
    setup(b) {
      b.onLoad({ filter: /[\\/]packages[\\/]api[\\/]dist[\\/]lazy-module\.js$/ }, () => ({
        resolveDir: API_DIST,
        loader: 'js',
        contents: [
          '// lazy-module.js of the single-file gwctl: the same accessor, the libraries named so that they are bundled.',
          `const LOAD = { ${specifiers.map((s) => `${JSON.stringify(s)}: () => require(${JSON.stringify(s)})`).join(', ')} };`,
          'export function lazyModule(specifier) {',
          '  let loaded;',
          '  return () => (loaded ??= LOAD[specifier]());',
          '}',
        ].join('\n'),
      }));
      b.onLoad({ filter: /[\\/]node_modules[\\/]ink[\\/]build[\\/]utils\.js$/ }, () => ({ loader: 'js', contents: 'export const isDev = () => false;\n' }));
      b.onLoad({ filter: /[\\/]node_modules[\\/]ink[\\/]build[\\/]devtools\.js$/ }, () => ({ loader: 'js', contents: 'export {};\n' }));
      b.onResolve({ filter: /^punycode$/ }, () => ({ path: rootRequire.resolve('punycode/punycode.js') }));
    },
  };
}

// Runs before any bundled code: an older Node.js gets one line instead of a failure deep inside.
// Node.js prints no deprecation warning for code under node_modules (url.parse() in node-fetch,
// under the Kubernetes client, say); in the bundle every dependency is outside node_modules,
// and users of the command would get one on every run, so the bundle prints none.
const BANNER = `import { createRequire as __gwctlCreateRequire } from 'node:module';
const require = __gwctlCreateRequire(import.meta.url);
process.noDeprecation = true;
if (Number(process.versions.node.split('.')[0]) < ${NODE_MAJOR}) {
  process.stderr.write('gwctl: needs Node.js ${NODE_MAJOR} or newer; this is Node.js ' + process.version + ' (https://nodejs.org)\\n');
  process.exit(1);
}`;

async function bundle(pkg) {
  const result = await build({
    entryPoints: [join(GWCTL, 'bin/gwctl.js')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: `node${NODE_MAJOR}`,
    write: false,
    outfile: 'gwctl.js',
    metafile: true,
    legalComments: 'none',
    logLevel: 'error',
    banner: { js: BANNER },
    define: { __GWCTL_VERSION__: JSON.stringify(pkg.version), 'process.env.NODE_ENV': '"production"' },
    plugins: [bundleFixes()],
  });
  const left = new Set();
  for (const input of Object.values(result.metafile.inputs)) {
    for (const imp of input.imports) if (imp.external && !isBuiltin(imp.path) && !OPTIONAL_ADDONS.has(imp.path)) left.add(imp.path);
  }
  if (left.size) fail(`modules left outside the bundle: ${[...left].join(', ')} (bundle them, or say in scripts/gwctl-build.mjs why they may be absent)`);
  return { code: result.outputFiles[0].text, inputs: Object.keys(result.metafile.inputs) };
}

/** The npm packages whose code is in the bundle, each with its license text. */
function thirdPartyLicenses(inputs) {
  const packages = new Map();
  for (const input of inputs) {
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input.replace(/\\/g, '/'));
    if (!m || packages.has(m[1])) continue;
    const dir = join(ROOT, m[1]);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)/i.test(f));
    packages.set(m[1], { name: pkg.name, version: pkg.version, license: pkg.license ?? 'see its package', text: file ? readFileSync(join(dir, file), 'utf8').trim() : undefined });
  }
  const sorted = [...packages.values()].sort((a, b) => a.name.localeCompare(b.name) || a.version.localeCompare(b.version));
  const sections = sorted.map((p) => `${p.name} ${p.version} (${p.license})\n${'-'.repeat(72)}\n${p.text ?? `No license file in the package; its package.json says: ${p.license}.`}`);
  return `The single-file gwctl contains the code of these npm packages, under their licenses:\n\n${sections.join('\n\n\n')}\n`;
}

function readme(pkg) {
  return `# gwctl ${pkg.version}

The command line of Tollgate, a gateway for LLM traffic on Kubernetes: it traces how a gateway
processes a request, shows the configuration a proxy has loaded with the health of its
backends, and reads or sets the log levels of proxies and of the controller.

One file with every dependency inside; it needs Node.js ${NODE_MAJOR} or newer and nothing else.

    npm install -g ./tollgate-gwctl-${pkg.version}.tgz
    gwctl --help
    gwctl config all gateway/<name> -n <namespace>     # a Gateway in the current kubeconfig context
    gwctl config all --local                           # a standalone proxy on this machine

The Tollgate repository's docs/gwctl.md describes every command, its flags and exit codes.
License: ${pkg.license} (LICENSE); the bundled packages' licenses are in THIRD-PARTY-LICENSES.txt.
`;
}

/** The npm package: the same file as its `gwctl` bin, no dependencies. */
function pack(pkg, file, licenses, out) {
  const manifest = {
    name: pkg.name,
    version: pkg.version,
    description: pkg.description,
    license: pkg.license,
    type: 'module',
    bin: { gwctl: 'gwctl.js' },
    engines: { node: `>=${NODE_MAJOR}` },
  };
  const tgz = join(out, `${pkg.name.replace(/^@/, '').replace('/', '-')}-${pkg.version}.tgz`);
  writeAtomically(
    tgz,
    npmTarball({
      'package.json': { data: `${JSON.stringify(manifest, null, 2)}\n`, mode: 0o644 },
      'gwctl.js': { data: file, mode: 0o755 },
      'README.md': { data: readme(pkg), mode: 0o644 },
      LICENSE: { data: readFileSync(join(ROOT, 'LICENSE')), mode: 0o644 },
      'THIRD-PARTY-LICENSES.txt': { data: licenses, mode: 0o644 },
    }),
  );
  return tgz;
}

/** Writes `data` beside `file` and renames it over: a reader (pnpm gwctl:install, a test) never sees half a file. */
function writeAtomically(file, data, mode = 0o644) {
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, data, { mode });
  chmodSync(partial, mode);
  renameSync(partial, file);
}

async function main() {
  const { out } = options();
  if (!existsSync(join(GWCTL, 'dist/cli.js'))) fail('packages/gwctl/dist is missing: run `pnpm build` first (pnpm gwctl:build does)');
  const pkg = JSON.parse(readFileSync(join(GWCTL, 'package.json'), 'utf8'));
  const { code, inputs } = await bundle(pkg);
  try {
    mkdirSync(out, { recursive: true });
  } catch (err) {
    fail(`cannot create ${out}: ${err.code ?? err.message}`);
  }
  const file = join(out, 'gwctl');
  writeAtomically(file, code, 0o755);
  const licenses = thirdPartyLicenses(inputs);
  writeAtomically(join(out, 'THIRD-PARTY-LICENSES.txt'), licenses);
  const tgz = pack(pkg, code, licenses, out);
  const mb = (Buffer.byteLength(code) / 1024 / 1024).toFixed(1);
  const shown = (path) => (relative(process.cwd(), path).startsWith('..') ? path : relative(process.cwd(), path));
  process.stdout.write(`gwctl ${pkg.version}:\n  ${shown(file)}  (${mb} MiB, Node.js ${NODE_MAJOR}+)\n  ${shown(tgz)}\n`);
  process.stdout.write(`Install: pnpm gwctl:install [--prefix DIR] (from dist/gwctl)   or   npm install -g ${shown(tgz)}\n`);
}

await main();
