import { describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS } from '@tollgate/api';
import { isUsageError, parseArgv, resolveOptions } from '../src/options.js';

const resolve = (argv: string[], env: NodeJS.ProcessEnv = {}) => resolveOptions(parseArgv(argv), env, '0.1.0');

describe('controller options', () => {
  it('defaults', () => {
    const o = resolve([]);
    expect(o).toMatchObject({
      namespace: 'tollgate-system',
      controllerName: 'tollgate.dev/gateway-controller',
      adminAddr: { host: '127.0.0.1', port: 9095 },
      metricsAddr: { host: '', port: 9092 },
      healthAddr: { host: '', port: 9093 },
      snapshotAddr: { host: '', port: 9978 },
      snapshotPlaintext: false,
      snapshotCaSecret: 'tollgate-ca',
      snapshotTlsNames: [],
      proxyImage: 'ghcr.io/tollgate-dev/tollgate:0.1.0',
      // A Gateway chooses no image unless the admin allows some.
      gatewayProxyImages: [],
      snapshotService: 'tollgate-controller.tollgate-system.svc:9978',
      leaderElection: { enabled: false, leaseName: 'tollgate-controller', leaseDurationMs: 15000, renewDeadlineMs: 10000, retryPeriodMs: 2000 },
    });
    expect(o.logDirective).toBe('info');
    expect(o.streamLimits).toEqual({ maxMessageBytes: 65536, maxStreams: 4096, maxStreamsPerGateway: 256, maxStreamAgeMs: 1_800_000, reauthIntervalMs: 300_000 });
    expect(o.tokenReviewsPerSecond).toBe(50);
  });

  it('the bounds on expressions are set by flag or environment, within the schema\'s range', () => {
    expect(resolve([]).limits).toEqual(DEFAULT_LIMITS);
    const o = resolve(['--regex-max-program-size=400', '--cel-max-cost=500'], { TOLLGATE_CEL_MAX_HEADERS: '20', TOLLGATE_REGEX_MAX_INPUT_LENGTH: '64' });
    expect(o.limits).toEqual({ regex: { ...DEFAULT_LIMITS.regex, maxProgramSize: 400, maxInputLength: 64 }, cel: { ...DEFAULT_LIMITS.cel, maxCost: 500, maxHeaders: 20 } });
    expect(() => resolve(['--regex-max-program-size=3'])).toThrow('--regex-max-program-size "3" is not a whole number from 8 to 100000');
    expect(() => resolve([], { TOLLGATE_CEL_MAX_COST: 'lots' })).toThrow('TOLLGATE_CEL_MAX_COST "lots" is not a whole number from 1 to 100000000');
  });

  it('the domains whose infrastructure keys Gateways may not set: a default list, replaced by flag or environment, checked', () => {
    expect(resolve([]).gatewayInfrastructureDeniedDomains).toEqual(expect.arrayContaining(['istio.io', 'linkerd.io', 'cni.cncf.io']));
    expect(resolve(['--gateway-infrastructure-denied-domains=example.com, mesh.example.org']).gatewayInfrastructureDeniedDomains).toEqual(['example.com', 'mesh.example.org']);
    expect(resolve([], { TOLLGATE_GATEWAY_INFRASTRUCTURE_DENIED_DOMAINS: 'example.com' }).gatewayInfrastructureDeniedDomains).toEqual(['example.com']);
    // Empty: Kubernetes' and Tollgate's own keys only (always refused).
    expect(resolve(['--gateway-infrastructure-denied-domains=']).gatewayInfrastructureDeniedDomains).toEqual([]);
    expect(() => resolve(['--gateway-infrastructure-denied-domains=istio.io/'])).toThrow('--gateway-infrastructure-denied-domains: "istio.io/" is not a lower-case DNS domain');
  });

  it('the snapshot stream bounds are set by flag or environment', () => {
    const o = resolve(
      ['--snapshot-max-message-bytes=4096', '--snapshot-max-streams=10', '--snapshot-max-streams-per-gateway=3', '--snapshot-max-stream-age=90s', '--snapshot-reauth-interval=1s'],
      { TOLLGATE_SNAPSHOT_TOKEN_REVIEWS_PER_SECOND: '5' },
    );
    expect(o.streamLimits).toEqual({ maxMessageBytes: 4096, maxStreams: 10, maxStreamsPerGateway: 3, maxStreamAgeMs: 90_000, reauthIntervalMs: 1000 });
    expect(o.tokenReviewsPerSecond).toBe(5);
  });

  it('the chart’s flags are accepted as it renders them', () => {
    const o = resolve([
      '--gateway-class-controller=tollgate.dev/gateway-controller',
      '--snapshot-addr=:9978',
      '--metrics-addr=:9092',
      '--health-addr=:9093',
      '--admin-addr=127.0.0.1:9095',
      '--proxy-image=ghcr.io/tollgate-dev/tollgate:0.1.0',
      '--snapshot-service=tollgate-controller.tollgate-system.svc:9978',
      '--leader-elect=false',
      '--log-level=info,deployer=debug,gateway-controller=info,tollgate/syncer=info,tollgate/translator=info',
      '--namespace=tollgate-system',
      '--snapshot-ca-secret=tollgate-ca',
      '--snapshot-tls-names=tollgate.example.com,198.18.0.10',
      '--gateway-proxy-images=registry.example.com/canary/,registry.example.com/tollgate:0.2.0',
    ]);
    expect(o.gatewayProxyImages).toEqual(['registry.example.com/canary/', 'registry.example.com/tollgate:0.2.0']);
    expect(resolve([], { TOLLGATE_GATEWAY_PROXY_IMAGES: 'registry.example.com/' }).gatewayProxyImages).toEqual(['registry.example.com/']);
    expect(o.snapshotTlsNames).toEqual(['tollgate.example.com', '198.18.0.10']);
    expect(o.logDirective).toBe('info,deployer=debug,gateway-controller=info,tollgate/syncer=info,tollgate/translator=info');
    expect(o.leaderElection.enabled).toBe(false);
  });

  it('each flag has an environment equivalent; the flag wins', () => {
    const env = { TOLLGATE_ADMIN_ADDR: '127.0.0.1:1', TOLLGATE_LEADER_ELECT: 'true', TOLLGATE_NAMESPACE: 'ops', TOLLGATE_LOG_LEVEL: 'debug' };
    const o = resolve(['--admin-addr', '127.0.0.1:2'], env);
    expect(o.adminAddr.port).toBe(2);
    expect(o.leaderElection.enabled).toBe(true);
    expect(o.namespace).toBe('ops');
    expect(resolve([], { TOLLGATE_SNAPSHOT_PLAINTEXT: 'true' }).snapshotPlaintext).toBe(true);
    expect(resolve(['--snapshot-plaintext'], { TOLLGATE_SNAPSHOT_PLAINTEXT: 'false' }).snapshotPlaintext).toBe(true);
    expect(o.logDirective).toBe('debug');
    expect(o.snapshotService).toBe('tollgate-controller.ops.svc:9978');
  });

  it.each([
    [['--metrics-addr=nine'], /--metrics-addr "nine" is not <host>:<port>/],
    [['--admin-addr=127.0.0.1:70000'], /--admin-addr "127.0.0.1:70000"/],
    [['--leader-elect=yes'], /--leader-elect "yes" is not a boolean; use true or false/],
    [['--namespace=Tollgate'], /--namespace "Tollgate" is not a namespace name/],
    [['--gateway-class-controller=tollgate'], /is not a controller name; it is a domain-prefixed path/],
    [['--proxy-image=not an image'], /--proxy-image "not an image" is not an image reference/],
    [['--gateway-proxy-images=registry.example.com/,Not An Image'], /--gateway-proxy-images: "Not An Image" is not an image reference or prefix/],
    [['--snapshot-service=:9978'], /--snapshot-service ":9978" must be <host>:<port> with a host name/],
    [['--log-level=info,syncer=debug'], /--log-level: unknown module "syncer"; expected one of tollgate\/syncer/],
    [['--log-level=loud'], /--log-level: "loud" is not a level/],
    [['--leader-elect-lease-duration=5s', '--leader-elect-renew-deadline=5s'], /must be shorter than --leader-elect-lease-duration/],
    [['--leader-elect-retry-period=1h'], /is not a duration/],
    [['--snapshot-ca-secret=Tollgate_CA'], /--snapshot-ca-secret "Tollgate_CA" is not a Secret name/],
    [['--snapshot-tls-names=ok.example,not a name'], /--snapshot-tls-names: "not a name" is neither a DNS name nor an IP address/],
    [['--snapshot-max-message-bytes=100'], /--snapshot-max-message-bytes "100" is not a whole number from 1024 to 4194304/],
    [['--snapshot-max-streams=0'], /--snapshot-max-streams "0" is not a whole number from 1 to 1000000/],
    [['--snapshot-max-streams-per-gateway=many'], /--snapshot-max-streams-per-gateway "many" is not a whole number/],
    [['--snapshot-reauth-interval=500ms'], /--snapshot-reauth-interval "500ms" is out of range; give 1s to 1440m/],
    [['--snapshot-max-stream-age=2000m'], /--snapshot-max-stream-age "2000m" is out of range/],
    [['--snapshot-token-reviews-per-second=1e3'], /--snapshot-token-reviews-per-second "1e3" is not a whole number/],
    [['--bogus'], /unknown flag --bogus/],
    [['positional'], /unexpected argument "positional"/],
    [['--admin-addr'], /--admin-addr needs a value/],
  ])('%j is refused: %s', (argv, message) => {
    let err: unknown;
    try {
      resolve(argv);
    } catch (e) {
      err = e;
    }
    expect(isUsageError(err)).toBe(true);
    expect((err as Error).message).toMatch(message);
  });

  it('an environment variable with a bad value is named', () => {
    expect(() => resolve([], { TOLLGATE_METRICS_ADDR: 'x' })).toThrow(/TOLLGATE_METRICS_ADDR "x"/);
  });
});
