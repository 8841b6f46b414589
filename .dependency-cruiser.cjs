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
  ['log', 'metrics'],
  ['config', 'ratelimit'],
  ['upstream'],
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

// The controller, as its stages are being laid out (docs/architecture.md). Rules with severity
// 'warn' are broken by the code of today and hold once the controller stages land; they turn
// to 'error' then.
const C = src('controller');
const controllerRules = [
  {
    name: 'controller-foundation',
    severity: 'error',
    comment: 'kube/, runtime/, log/, queue/, types/, events/ and metrics/ are what the stages run on: they import no stage',
    from: { path: `${C}(kube|runtime|log|queue|types|events|metrics)/` },
    to: { path: `${C}(watch|translate|reconcile|snapshots|status|deployer|pki|leader|admin|health|proxy-settings)/` },
  },
  {
    name: 'controller-proxy-settings',
    severity: 'error',
    comment: 'proxy-settings/ (parameters, overrides, ports, defaults) sits below translate/ and deployer/: it imports neither, nor any stage',
    from: { path: `${C}proxy-settings/` },
    to: { path: `${C}(watch|translate|reconcile|snapshots|status|deployer|pki|leader|admin|health)/` },
  },
  {
    name: 'controller-translate-pure',
    severity: 'error',
    comment: 'translate/ is a pure function of the objects: it imports no watch, stage, server or API client',
    from: { path: `${C}translate/` },
    to: { path: `${C}(watch|reconcile|snapshots|status|pki|leader|admin|health|kube|runtime|events|queue)/` },
  },
  {
    name: 'controller-watch-below-stages',
    severity: 'error',
    comment: 'watch/ feeds the stages and imports none of them',
    from: { path: `${C}watch/` },
    to: { path: `${C}(reconcile|snapshots|status|pki|leader|admin|health)/` },
  },
  {
    name: 'controller-translate-watch-not-deployer',
    // until the controller stages land
    severity: 'warn',
    comment: 'translate/ and watch/ do not import deployer/: what both read of a Gateway\'s parameters is in proxy-settings/',
    from: { path: `${C}(translate|watch)/` },
    to: { path: `${C}deployer/` },
  },
  {
    name: 'controller-not-status',
    // until the controller stages land
    severity: 'warn',
    comment: 'deployer/, pki/ and leader/ do not import status/ (statusCode is in kube/)',
    from: { path: `${C}(deployer|pki|leader)/` },
    to: { path: `${C}status/` },
  },
  {
    name: 'controller-status-not-deployer',
    // until the controller stages land
    severity: 'warn',
    comment: 'status/ does not import deployer/: it reads the proxies through one read-only view',
    from: { path: `${C}status/` },
    to: { path: `${C}deployer/` },
  },
];

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
    ...controllerRules,
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
