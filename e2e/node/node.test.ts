// The e2e node itself: a real kubelet runs the project's images as pods, Services reach them
// through kube-proxy, pods resolve names through cluster DNS and reach the API server through
// the `kubernetes` Service, and kubectl's port-forward, logs and exec work against them.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { exec } from '../lib/exec.js';
import { NODE } from '../lib/node/addresses.js';
import { nodeAvailability, REPO_ROOT } from '../lib/tools.js';
import { useNode } from '../lib/use-node.js';
import { mockLlm, proxy } from './manifests.js';

const availability = nodeAvailability();

async function chat(url: string, content: string): Promise<{ status: number; body: { choices?: { message: { content: string } }[]; usage?: { completion_tokens: number } } }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-mock-completion-tokens': '3' },
    body: JSON.stringify({ model: 'mock-gpt', messages: [{ role: 'user', content }] }),
  });
  return { status: res.status, body: (await res.json()) as never };
}

/**
 * Waits until kube-proxy has programmed a Service: after a rollout, the Service's endpoints
 * reach kube-proxy a moment later, and until then its rules refuse the connection.
 */
async function serviceProgrammed(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await fetch(url, { signal: AbortSignal.timeout(5_000) });
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`${url} still unreachable after 60 s: ${String((err as Error).cause ?? err)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

describe.skipIf(!availability.run)('e2e node', () => {
  const node = useNode();
  const ns = 'node-e2e';

  const kubectl = async (...args: string[]) => {
    const r = await node.current.kubectl(args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return r.stdout;
  };
  const apply = (manifest: string) => node.current.kubectl(['apply', '-f', '-'], { input: manifest }).then((r) => {
    if (r.code !== 0) throw new Error(`kubectl apply: ${r.stderr}`);
  });

  it('registers a Ready node with its address, pod range and version', async () => {
    const n = JSON.parse(await kubectl('get', 'node', NODE.name, '-o', 'json')) as {
      spec: { podCIDR: string };
      status: { addresses: { type: string; address: string }[]; conditions: { type: string; status: string }[]; nodeInfo: { kubeletVersion: string; containerRuntimeVersion: string } };
    };
    expect(n.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(n.status.addresses).toContainEqual({ type: 'InternalIP', address: NODE.ip });
    expect(n.spec.podCIDR).toBe(NODE.podCidr);
    expect(n.status.nodeInfo.kubeletVersion).toBe('v1.36.3');
    expect(n.status.nodeInfo.containerRuntimeVersion).toMatch(/^containerd:\/\//);
    // The `kubernetes` Service points at the API server on the node address.
    const endpoints = await kubectl('get', 'endpointslices', '-n', 'default', '-l', 'kubernetes.io/service-name=kubernetes', '-o', 'jsonpath={.items[*].endpoints[*].addresses[*]}');
    expect(endpoints.trim()).toBe(NODE.ip);
  });

  it('runs the mock-llm image as a Deployment reachable through its ClusterIP from the host', async () => {
    await kubectl('create', 'namespace', ns);
    await apply(mockLlm(ns));
    await kubectl('rollout', 'status', '-n', ns, 'deployment/mock-llm', '--timeout=120s');
    const ip = (await kubectl('get', 'service', '-n', ns, 'mock-llm', '-o', 'jsonpath={.spec.clusterIP}')).trim();
    expect(ip.startsWith('198.19.')).toBe(true);
    await serviceProgrammed(`http://${ip}:8080/healthz`);
    const r = await chat(`http://${ip}:8080/v1/chat/completions`, 'hello node');
    expect(r.status).toBe(200);
    expect(r.body.choices?.[0]?.message.content).toBe('hello node hello');
    expect(r.body.usage?.completion_tokens).toBe(3);
    // Both replicas run as the image's non-root user.
    const uids = await kubectl('exec', '-n', ns, 'deploy/mock-llm', '--', 'node', '-p', 'process.getuid()');
    expect(uids.trim()).toBe('1000');
  });

  it('gives pods cluster DNS and the API server through the kubernetes Service', async () => {
    const script = `
      const dns = require('node:dns/promises'); const https = require('node:https'); const fs = require('node:fs');
      (async () => {
        const sa = '/var/run/secrets/kubernetes.io/serviceaccount/';
        const svc = await dns.lookup('mock-llm.${ns}.svc.cluster.local');
        const api = await dns.lookup('kubernetes.default.svc');
        const version = await new Promise((resolve, reject) => https.get({ host: 'kubernetes.default.svc', path: '/version', ca: fs.readFileSync(sa + 'ca.crt'),
          headers: { authorization: 'Bearer ' + fs.readFileSync(sa + 'token', 'utf8') } }, (res) => { let b = ''; res.on('data', (d) => b += d); res.on('end', () => resolve(JSON.parse(b).gitVersion)); }).on('error', reject));
        let outside = 'resolved';
        try { await dns.lookup('example.com'); } catch (e) { outside = e.code; }
        console.log(JSON.stringify({ svc: svc.address, api: api.address, version, outside }));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const out = JSON.parse(await kubectl('exec', '-n', ns, 'deploy/mock-llm', '--', 'node', '-e', script)) as Record<string, string>;
    const svcIp = (await kubectl('get', 'service', '-n', ns, 'mock-llm', '-o', 'jsonpath={.spec.clusterIP}')).trim();
    expect(out).toMatchObject({ svc: svcIp, api: NODE.kubernetesServiceIp, version: 'v1.36.3' });
    // Cluster DNS forwards nothing off the machine.
    expect(out.outside).not.toBe('resolved');
  });

  it('runs the proxy image as a pod serving its mounted configuration', async () => {
    await apply(proxy(ns));
    await kubectl('rollout', 'status', '-n', ns, 'deployment/tollgate', '--timeout=120s');
    const ip = (await kubectl('get', 'service', '-n', ns, 'tollgate', '-o', 'jsonpath={.spec.clusterIP}')).trim();
    await serviceProgrammed(`http://${ip}/`);
    const r = await chat(`http://${ip}/v1/chat/completions`, 'through the gateway');
    expect(r.status).toBe(200);
    expect(r.body.choices?.[0]?.message.content).toBe('through the gateway');
  });

  it('port-forwards to the proxy pod and reads its logs', async () => {
    const pod = (await kubectl('get', 'pods', '-n', ns, '-l', 'app=tollgate', '-o', 'jsonpath={.items[0].metadata.name}')).trim();
    expect(pod).not.toBe('');
    const pf = spawn(node.current.tools.kubectl, ['port-forward', '-n', ns, `pod/${pod}`, ':8080'], { env: node.current.env, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = '';
        pf.stdout.setEncoding('utf8').on('data', (d: string) => {
          out += d;
          const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
          if (m) resolve(Number(m[1]));
        });
        pf.once('exit', (code) => reject(new Error(`kubectl port-forward exited ${code}: ${out}`)));
      });
      const r = await chat(`http://127.0.0.1:${port}/v1/chat/completions`, 'forwarded');
      expect(r.status).toBe(200);
      expect(r.body.choices?.[0]?.message.content).toBe('forwarded forwarded forwarded');
    } finally {
      pf.kill();
    }
    const logs = await kubectl('logs', '-n', ns, `pod/${pod}`);
    expect(logs).toMatch(/8080/);
  });

  it('gwctl reads the proxy pod\'s config and log level through a port-forward to its admin port', async () => {
    const gwctl = (...args: string[]) =>
      exec(process.execPath, [join(REPO_ROOT, 'packages/gwctl/bin/gwctl.js'), ...args], {
        env: { PATH: process.env.PATH, HOME: node.current.dir, KUBECONFIG: node.current.kubeconfig },
      });
    // gwctl reads the Gateway before its pods: the object exists (no controller runs here; the
    // proxy pod above carries its label).
    await apply(JSON.stringify({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'node-e2e', namespace: ns },
      spec: { gatewayClassName: 'tollgate', listeners: [{ name: 'http', port: 80, protocol: 'HTTP' }] },
    }));
    const config = await gwctl('config', 'all', 'gateway/node-e2e', '-n', ns);
    expect(config.code, config.stderr).toBe(0);
    expect(config.stdout).toMatch(/\bllm\b/);
    expect(config.stdout).toContain(`mock-llm.${ns}.svc.cluster.local:8080`);
    const log = await gwctl('log', 'gateway/node-e2e', '-n', ns);
    expect(log.code, log.stderr).toBe(0);
    expect(log.stdout).toMatch(/info/);
  });
});
