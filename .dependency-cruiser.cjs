// The import directions of docs/architecture.md ("Import direction"), checked by `pnpm lint`
// (`depcruise`): between packages, between the proxy's folders, between the controller's
// folders, and no import cycle anywhere in packages/*/src. Type-only imports count: a type
// that points up is an arrow up all the same.

// Packages, lowest first. A package's src imports only the packages listed before it (and its
// own files); the four of the last step do not import each other. testkit is test support:
// no package's src imports it.
const PACKAGE_ORDER = [['api'], ['kit'], ['proxy', 'controller', 'gwctl', 'mock-llm']];
const TEST_ONLY_PACKAGES = ['testkit'];

// The proxy's folders (and its top-level files), lowest first. A folder imports only from the
// steps before its own: a request flows down from process/ to the helpers it runs on.
const PROXY_LAYERS = [
  ['errors.ts', 'exit-codes.ts'],
  ['log', 'metrics', 'grpc'],
  ['config', 'ratelimit'],
  ['upstream'],
  ['auth', 'policies'],
  ['routing', 'filters', 'llm'],
  ['pipeline'],
  ['trace'],
  ['server'],
  ['admin', 'source'],
  ['process'],
  ['cli.ts', 'index.ts'],
];

const src = (name) => `^packages/${name}/src/`;
const alt = (names) => `(${names.join('|')})`;
// A proxy layer entry as a path: a folder (with its files) or a file.
const proxyPath = (entry) => (entry.endsWith('.ts') ? `${entry.replace(/\./g, '\\.')}$` : `${entry}/`);

function packageRules() {
  const rules = [];
  PACKAGE_ORDER.forEach((step, i) => {
    const allowed = PACKAGE_ORDER.slice(0, i).flat();
    for (const name of step) {
      const forbidden = [...PACKAGE_ORDER.flat(), ...TEST_ONLY_PACKAGES].filter((p) => p !== name && !allowed.includes(p));
      rules.push({
        name: `package-${name}`,
        severity: 'error',
        comment: `packages/${name}/src imports ${allowed.length ? `only ${allowed.join(', ')} of ours` : 'no other package of ours'} (docs/architecture.md, "Import direction")`,
        from: { path: src(name) },
        to: { path: `^packages/${alt(forbidden)}/` },
      });
    }
  });
  rules.push({
    name: 'src-not-tests',
    severity: 'error',
    comment: 'src never imports a test, an e2e suite or a benchmark',
    from: { path: '^packages/[^/]+/src/' },
    to: { path: '^(packages/[^/]+/test/|e2e/|bench/)' },
  });
  return rules;
}

function proxyRules() {
  const rules = [];
  PROXY_LAYERS.forEach((step, i) => {
    const above = PROXY_LAYERS.slice(i).flat();
    for (const entry of step) {
      const forbidden = above.filter((e) => e !== entry);
      if (!forbidden.length) continue;
      const below = PROXY_LAYERS.slice(0, i).flat();
      rules.push({
        name: `proxy-${entry.replace(/\.ts$/, '')}`,
        severity: 'error',
        comment: `proxy ${entry} imports ${below.length ? `only ${below.join(', ')}` : 'no other folder'} (docs/architecture.md, "Import direction")`,
        from: { path: `${src('proxy')}${proxyPath(entry)}` },
        to: { path: `${src('proxy')}${alt(forbidden.map(proxyPath))}` },
      });
    }
  });
  return rules;
}

// The controller's folders (and its top-level files): what each may import, as the table of
// docs/architecture.md ("The controller", "Import direction") says. Everything of the
// controller not in an entry's list is forbidden to it; errors.ts and types/ are open to all.
const CONTROLLER_ALLOWED = {
  'types': [],
  'errors.ts': [],
  'log': [],
  'queue': [],
  'runtime': [],
  'kube': ['runtime'],
  'metrics': ['runtime'],
  'health': ['runtime'],
  'proxy-settings': [],
  'translate': ['proxy-settings'],
  'watch': ['translate', 'proxy-settings', 'kube', 'metrics', 'runtime'],
  'snapshots': ['kube', 'runtime'],
  'options.ts': ['snapshots', 'proxy-settings', 'runtime', 'log'],
  'pki': ['kube', 'runtime'],
  'deployer': ['pki', 'proxy-settings', 'kube', 'runtime'],
  'events': ['kube'],
  'leader': ['options.ts', 'kube', 'runtime'],
  'reconcile': ['translate', 'snapshots', 'metrics', 'runtime'],
  'status': ['translate', 'watch', 'kube', 'metrics', 'runtime'],
  'admin': ['snapshots', 'runtime', 'log'],
};
const CONTROLLER_OPEN = ['errors.ts', 'types'];
// stages/ wires every folder above; controller.ts wires stages/; cli.ts and index.ts are the entry points.
const CONTROLLER_TOP = { stages: Object.keys(CONTROLLER_ALLOWED), 'controller.ts': ['stages', ...Object.keys(CONTROLLER_ALLOWED)] };

function controllerRules() {
  const all = { ...CONTROLLER_ALLOWED, ...CONTROLLER_TOP };
  const everything = [...Object.keys(all), 'cli.ts', 'index.ts'];
  return Object.entries(all).map(([entry, allowed]) => {
    const forbidden = everything.filter((e) => e !== entry && !allowed.includes(e) && !CONTROLLER_OPEN.includes(e));
    return {
      name: `controller-${entry.replace(/\.ts$/, '')}`,
      severity: 'error',
      comment: `controller ${entry} imports ${allowed.length ? `only ${allowed.join(', ')}` : 'no other folder'} of the controller, besides errors.ts and types/ (docs/architecture.md, "The controller")`,
      from: { path: `${src('controller')}${proxyPath(entry)}` },
      to: { path: `${src('controller')}${alt(forbidden.map(proxyPath))}` },
    };
  });
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'no import cycle in any package\'s src: each file can be read knowing only what it imports',
      from: { path: '^packages/[^/]+/src/' },
      to: { circular: true },
    },
    ...packageRules(),
    ...proxyRules(),
    ...controllerRules(),
  ],
  options: {
    // Type-only imports are arrows too.
    tsPreCompilationDeps: true,
    // Resolves @tollgate/* to each package's src, so the check needs no build.
    tsConfig: { fileName: 'tsconfig.depcruise.json' },
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules)/' },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
