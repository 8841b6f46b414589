// Certificates for a throwaway cluster, as envtest makes them: a CA, a serving certificate
// for 127.0.0.1/localhost, a client certificate for an admin in system:masters, and a
// service-account signing key. Made with the openssl CLI (Node cannot issue certificates).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './exec.js';

export interface ClusterCerts {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  saKey: string;
  saPub: string;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export interface CertOptions {
  /** More addresses the API server's serving certificate names (a node address, the `kubernetes` Service IP). */
  extraServingIps?: readonly string[];
}

export async function makeCerts(dir: string, opts: CertOptions = {}): Promise<ClusterCerts> {
  const p = (name: string) => join(dir, name);
  const c: ClusterCerts = {
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    servingCert: p('apiserver.crt'),
    servingKey: p('apiserver.key'),
    adminCert: p('admin.crt'),
    adminKey: p('admin.key'),
    saKey: p('sa.key'),
    saPub: p('sa.pub'),
  };
  await run('openssl', ['req', '-x509', ...EC, '-keyout', p('ca.key'), '-out', c.caCert, '-days', '2', '-subj', '/CN=tollgate-e2e-ca',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature']);
  const sans = ['IP:127.0.0.1', ...(opts.extraServingIps ?? []).map((ip) => `IP:${ip}`),
    'DNS:localhost', 'DNS:kubernetes', 'DNS:kubernetes.default', 'DNS:kubernetes.default.svc', 'DNS:kubernetes.default.svc.cluster.local'];
  const issue = (key: string, cert: string, subj: string, ext: string[]) =>
    run('openssl', ['req', '-x509', ...EC, '-CA', c.caCert, '-CAkey', p('ca.key'), '-keyout', key, '-out', cert, '-days', '2', '-subj', subj,
      '-addext', 'basicConstraints=critical,CA:FALSE', '-addext', 'keyUsage=critical,digitalSignature,keyEncipherment', ...ext.flatMap((e) => ['-addext', e])]);
  await Promise.all([
    issue(c.servingKey, c.servingCert, '/CN=kube-apiserver', ['extendedKeyUsage=serverAuth', 'subjectAltName=' + sans.join(',')]),
    issue(c.adminKey, c.adminCert, '/O=system:masters/CN=tollgate-e2e-admin', ['extendedKeyUsage=clientAuth']),
    run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', c.saKey]),
  ]);
  writeFileSync(c.saPub, await run('openssl', ['pkey', '-in', c.saKey, '-pubout']));
  return c;
}

/** A client certificate signed by the cluster CA (e.g. a kubelet's `system:node:<name>` in `system:nodes`). */
export async function issueClientCert(certs: ClusterCerts, dir: string, name: string, subject: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  await run('openssl', ['req', '-x509', ...EC, '-CA', certs.caCert, '-CAkey', certs.caKey, '-keyout', key, '-out', cert, '-days', '2', '-subj', subject,
    '-addext', 'basicConstraints=critical,CA:FALSE', '-addext', 'keyUsage=critical,digitalSignature,keyEncipherment', '-addext', 'extendedKeyUsage=clientAuth']);
  return { cert, key };
}
