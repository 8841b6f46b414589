// The upstream Gateway API conformance suite (sigs.k8s.io/gateway-api/conformance, at the CRDs'
// version) against Tollgate on the e2e node, installed as users install it: `helm install` of
// charts/tollgate (the controller as a pod, the snapshot stream with TLS and TokenReview
// authentication), then the profiles of CONFORMANCE_PROFILES (GATEWAY-HTTP, GATEWAY-GRPC, GATEWAY-TLS) in one suite run, with the chart's GatewayClass and exactly the
// features it declares (packages/controller/src/translate/features.ts). The node has the Gateway
// API CRDs of the experimental channel (config/crd/experimental of the pinned module): at v1.6.1
// an HTTPRoute rule's `retry` (HTTPRouteRetry) is in that channel only. The run fails when a
// core test fails or a declared extended feature fails, and unless this run wrote its report
// (any earlier one is deleted first) with every test of each profile counted. The report goes to
// .test-results/conformance/; `pnpm conformance --update-report` copies a passing run's report
// to conformance/reports/ (the committed one changes only on purpose).
//
// In CI (CI=true) it is one of the node suites, and a missing suite binary is an error. Outside
// CI it runs with `pnpm conformance` (TOLLGATE_CONFORMANCE=1) and is skipped by a plain
// `pnpm test`: a run holds the machine's one node for a quarter of an hour.
//
// One test alone: TOLLGATE_CONFORMANCE_RUN_TEST=<ShortName> pnpm conformance (its report goes
// to .test-results/ instead, as it says nothing about the profile).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../packages/api/src/index.js';
import { SUPPORTED_FEATURES } from '../../packages/controller/src/translate/features.js';
import { CONTROLLER_DEPLOYMENT, installChart, SYSTEM_NAMESPACE, uninstallChart } from '../lib/chart.js';
import { NODE } from '../lib/node/addresses.js';
import { projectImage } from '../lib/node/images.js';
import { cacheDir, gatewayApiCrdDir, nodeAvailability, REPO_ROOT, VERSIONS } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { GATEWAY_CLASS, implementation, reportFileName, selectedProfiles, suiteBinary, type ConformanceReport } from './conformance-support.js';
import { kubectlOk, until } from './helm-install.lib.js';

const inCI = process.env.CI === 'true' || process.env.CI === '1';
const wanted = inCI || process.env.TOLLGATE_CONFORMANCE === '1';
if (!wanted) console.warn('skipping the Gateway API conformance run outside CI: `pnpm conformance` runs it (docs/conformance.md)');

function availability(): { run: boolean } {
  if (!wanted) return { run: false };
  const node = nodeAvailability();
  if (!node.run) return node;
  const bin = suiteBinary(cacheDir());
  const crds = gatewayApiCrdDir('experimental');
  if (!existsSync(crds)) throw new Error(`the Gateway API CRDs of the experimental channel are not installed: ${crds} (run \`bash scripts/install-test-tools.sh\`)`);
  if (existsSync(bin)) return { run: true };
  // In CI, or asked for explicitly (`pnpm conformance`): a missing suite is an error, not a skip.
  throw new Error(`the Gateway API conformance suite is not built: ${bin} (run \`bash conformance/build-suite.sh\`)`);
}

const singleTest = process.env.TOLLGATE_CONFORMANCE_RUN_TEST?.trim() || undefined;
const profiles = selectedProfiles();
const profileNames = profiles.map((p) => p.name).join(',');

/** The GatewayClass's proxy parameters for the run (proxy-settings/parameters.ts). */
const CLASS_PARAMETERS = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'conformance-proxies', namespace: SYSTEM_NAMESPACE, labels: { 'tollgate.dev/parameters': 'true' } },
  data: { cpuRequest: '10m', memoryRequest: '64Mi' },
};
const RESULTS = join(REPO_ROOT, '.test-results', 'conformance');

describe.skipIf(!availability().run)(`Gateway API conformance ${VERSIONS.gatewayApi} (${profileNames})`, () => {
  const node = useNode({ images: [projectImage('tollgate'), projectImage('tollgate-controller')], gatewayApiChannel: 'experimental' });

  beforeAll(async () => {
    const n = node.current;
    mkdirSync(RESULTS, { recursive: true });
    const started = Date.now();
    await installChart(n);
    // Every Gateway of the suite gets a proxy pod of its own, and the suite runs many tests at
    // once: with the default CPU request per proxy their requests together outgrow the node's two
    // CPUs and the last pods stay Pending (a Gateway never Programmed). The class's parameters ask
    // for a small request, as an admin would for a cluster of many small Gateways.
    await kubectlOk(n, ['apply', '-f', '-'], JSON.stringify(CLASS_PARAMETERS));
    await kubectlOk(n, ['patch', 'gatewayclass', GATEWAY_CLASS, '--type=merge', '-p', JSON.stringify({ spec: { parametersRef: { group: '', kind: 'ConfigMap', name: CLASS_PARAMETERS.metadata.name, namespace: SYSTEM_NAMESPACE } } })]);
    // The chart creates the GatewayClass the suite's Gateways name; the suite wants it Accepted (for its parameters too).
    await until(`GatewayClass ${GATEWAY_CLASS} Accepted with its parameters`, async () => {
      const gc = JSON.parse(await kubectlOk(n, ['get', 'gatewayclass', GATEWAY_CLASS, '-o', 'json'])) as { metadata: { generation: number }; status?: { conditions?: { type: string; status: string; observedGeneration?: number }[] } };
      const accepted = gc.status?.conditions?.find((c) => c.type === 'Accepted');
      return accepted?.status === 'True' && accepted.observedGeneration === gc.metadata.generation ? true : undefined;
    }, 120_000);
    console.info(`conformance: chart installed, controller Ready and GatewayClass ${GATEWAY_CLASS} Accepted in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }, 360_000);

  afterAll(async () => {
    // The controller's log beside the suite's, for whoever reads a failure.
    const r = await node.current.kubectl(['logs', '-n', SYSTEM_NAMESPACE, `deployment/${CONTROLLER_DEPLOYMENT}`, '--tail=-1']).catch(() => undefined);
    if (r?.code === 0) writeFileSync(join(RESULTS, singleTest ? `${singleTest}-controller.log` : 'controller.log'), r.stdout);
    await uninstallChart(node.current);
  }, 60_000);

  it(singleTest ? `runs ${singleTest}` : 'passes every core test and every declared extended feature', async () => {
    const n = node.current;
    const impl = implementation();
    const reportFile = join(RESULTS, singleTest ? `${singleTest}-report.yaml` : reportFileName(impl));
    // A report left by an earlier run must not pass for this one.
    rmSync(reportFile, { force: true });
    const args = [
      '-test.run', '^TestConformance$', '-test.v', '-test.timeout', '120m',
      `--gateway-class=${GATEWAY_CLASS}`,
      `--conformance-profiles=${profileNames}`,
      `--supported-features=${SUPPORTED_FEATURES.join(',')}`,
      // GatewayStaticAddresses: an address the node's Service range can give, and one outside it.
      `--usable-address=${NODE.gatewayStaticAddress}`,
      `--unusable-address=${NODE.gatewayUnusableAddress}`,
      `--report-output=${reportFile}`,
      `--organization=${impl.organization}`, `--project=${impl.project}`, `--url=${impl.url}`, `--version=${impl.version}`, `--contact=${impl.contact.join(',')}`,
      ...(singleTest ? [`--run-test=${singleTest}`] : []),
    ];
    const logFile = join(RESULTS, singleTest ? `${singleTest}.log` : 'suite.log');
    const log = createWriteStream(logFile);
    const started = Date.now();
    // The suite's test binary reads files relative to its working directory: a fresh one.
    const cwd = join(n.dir, 'conformance');
    mkdirSync(cwd, { recursive: true });
    const child = spawn(suiteBinary(cacheDir()), args, { cwd, env: { ...n.env, KUBECONFIG: n.kubeconfig }, stdio: ['ignore', 'pipe', 'pipe'] });
    const outcomes = new Map<string, 'PASS' | 'FAIL' | 'SKIP'>();
    const onLine = (line: string) => {
      log.write(`${line}\n`);
      // Top-level results of the suite's tests: "--- PASS: TestConformance/HTTPRouteSimpleSameNamespace (3.1s)".
      const m = /^\s{4}--- (PASS|FAIL|SKIP): TestConformance\/([A-Za-z0-9]+) /.exec(line);
      if (m) {
        outcomes.set(m[2]!, m[1] as 'PASS' | 'FAIL' | 'SKIP');
        console.info(`conformance ${m[1]} ${m[2]} (${Math.round((Date.now() - started) / 1000)} s)`);
      }
    };
    createInterface({ input: child.stdout }).on('line', onLine);
    createInterface({ input: child.stderr }).on('line', onLine);
    const [code] = (await once(child, 'exit')) as [number | null];
    log.end();
    const seconds = Math.round((Date.now() - started) / 1000);
    const list = (k: string) => [...outcomes].filter(([, v]) => v === k).map(([t]) => t).sort();
    console.info(`conformance run: ${seconds} s, exit ${code}; passed ${list('PASS').length}, failed ${list('FAIL').length} (${list('FAIL').join(', ')}), skipped ${list('SKIP').length}; log ${logFile}`);

    expect(existsSync(reportFile), `the suite wrote no report (exit ${code}); see ${logFile}`).toBe(true);
    const report = parseConfigText(readFileSync(reportFile, 'utf8'), reportFile) as ConformanceReport;
    expect(report.implementation).toMatchObject(impl);
    expect(list('FAIL'), `failed tests; see ${logFile}`).toEqual([]);
    expect(code).toBe(0);
    // One test alone: it passed. The profile: every core test and the tests of every declared
    // feature passed, and every one is counted (EXPECTED_TESTS in conformance-support.ts): a
    // suite that ran fewer (a renamed test, a feature no longer declared) fails here instead of
    // passing with less, and the report counts the tests this run's output shows passing.
    const counted = (p: ConformanceReport['profiles'][number]['core'] | undefined) => ({
      result: p?.result,
      failedTests: p?.failedTests ?? [],
      passed: p?.statistics?.Passed ?? 0,
      failed: p?.statistics?.Failed ?? 0,
      skipped: p?.statistics?.Skipped ?? 0,
    });
    // Per profile, as the report has them.
    const got = singleTest
      ? { [singleTest]: outcomes.get(singleTest) }
      : {
          profiles: report.profiles.map((p) => p.name).sort(),
          ...Object.fromEntries(
            profiles.map((p) => {
              const r = report.profiles.find((q) => q.name === p.name);
              return [p.name, { core: counted(r?.core), extended: { ...counted(r?.extended), supportedFeatures: [...(r?.extended?.supportedFeatures ?? [])].sort() } }];
            }),
          ),
        };
    const want = singleTest
      ? { [singleTest]: 'PASS' }
      : {
          profiles: profiles.map((p) => p.name).sort(),
          ...Object.fromEntries(
            profiles.map((p) => [
              p.name,
              {
                core: { result: 'success', failedTests: [], passed: p.expected.core, failed: 0, skipped: 0 },
                extended: { result: 'success', failedTests: [], passed: p.expected.extended, failed: 0, skipped: 0, supportedFeatures: SUPPORTED_FEATURES.filter((f) => p.extendedFeatures.has(f)).sort() },
              },
            ]),
          ),
        };
    expect(got, `the run's verdict; see ${logFile} and ${reportFile}`).toEqual(want);
  }, 150 * 60_000);
});
