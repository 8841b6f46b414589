// Shared by the translation tests: reading a testdata input strictly and rendering a result
// as the YAML the golden files hold.
import { parseAllDocuments, stringify } from 'yaml';
import { toWire } from '@tollgate/api';
import { parseObject } from '../src/types/schemas.js';
import type { Resources, TranslateOptions, TranslateResult } from '../src/translate/types.js';

export const CONTROLLER_NAME = 'tollgate.dev/gateway-controller';

export function emptyResources(): { -readonly [K in keyof Resources]-?: NonNullable<Resources[K]>[number][] } {
  return { gatewayClasses: [], gateways: [], listenerSets: [], httpRoutes: [], grpcRoutes: [], tlsRoutes: [], referenceGrants: [], gatewayPolicies: [], backends: [], backendTLSPolicies: [], services: [], endpointSlices: [], namespaces: [], secrets: [], configMaps: [] };
}

/** Options for a case: defaults, changed by a first line `# options: {...}` (JSON). */
export function caseOptions(text: string): TranslateOptions {
  const m = /^# options: (.*)$/m.exec(text.split('\n')[0] ?? '');
  return { controllerName: CONTROLLER_NAME, gatewayApiVersion: 'v1.6.1', ...(m ? (JSON.parse(m[1]!) as Partial<TranslateOptions>) : {}) };
}

/** Parses a multi-document YAML of Kubernetes objects; unknown kinds and fields are errors. */
export function parseResources(text: string, subject: string): Resources {
  const out = emptyResources();
  parseAllDocuments(text, { uniqueKeys: true, strict: true }).forEach((doc, i) => {
    if (doc.errors.length) throw new Error(`${subject} document ${i}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value: unknown = doc.toJS();
    if (value === null) return;
    const o = parseObject(value, `${subject} document ${i}`);
    switch (o.kind) {
      case 'GatewayClass':
        out.gatewayClasses.push(o.object);
        break;
      case 'Gateway':
        out.gateways.push(o.object);
        break;
      case 'ListenerSet':
        out.listenerSets.push(o.object);
        break;
      case 'HTTPRoute':
        out.httpRoutes.push(o.object);
        break;
      case 'GRPCRoute':
        out.grpcRoutes.push(o.object);
        break;
      case 'TLSRoute':
        out.tlsRoutes.push(o.object);
        break;
      case 'ReferenceGrant':
        out.referenceGrants.push(o.object);
        break;
      case 'GatewayPolicy':
        out.gatewayPolicies.push(o.object);
        break;
      case 'Backend':
        out.backends.push(o.object);
        break;
      case 'BackendTLSPolicy':
        out.backendTLSPolicies.push(o.object);
        break;
      case 'Service':
        out.services.push(o.object);
        break;
      case 'EndpointSlice':
        out.endpointSlices.push(o.object);
        break;
      case 'Namespace':
        out.namespaces.push(o.object);
        break;
      case 'Secret':
        out.secrets.push(o.object);
        break;
      case 'ConfigMap':
        out.configMaps.push(o.object);
        break;
    }
  });
  return out;
}

/** The result as plain data: snapshots as they would travel (secrets redacted), status maps as objects. */
export function resultData(result: TranslateResult): unknown {
  const redacted = (v: unknown): unknown => JSON.parse(JSON.stringify(v)) as unknown;
  return {
    snapshots: Object.fromEntries([...result.snapshots].map(([k, s]) => [k, redacted(s)])),
    status: {
      gatewayClasses: Object.fromEntries(result.status.gatewayClasses),
      gateways: Object.fromEntries(result.status.gateways),
      // Only in the cases with ListenerSets.
      ...(result.status.listenerSets?.size ? { listenerSets: Object.fromEntries(result.status.listenerSets) } : {}),
      httpRoutes: Object.fromEntries(result.status.httpRoutes),
      // Only in the cases that have some: the others' goldens stay as they were.
      ...(result.status.tlsRoutes?.size ? { tlsRoutes: Object.fromEntries(result.status.tlsRoutes) } : {}),
      gatewayPolicies: Object.fromEntries(result.status.gatewayPolicies),
      // Only where a case has Backends: the outputs of the others stay as they were.
      ...(result.status.grpcRoutes?.size ? { grpcRoutes: Object.fromEntries(result.status.grpcRoutes) } : {}),
      ...(result.status.backends?.size ? { backends: Object.fromEntries(result.status.backends) } : {}),
      // Only in the cases that have some: the others' goldens stay as they were.
      ...(result.status.backendTLSPolicies.size ? { backendTLSPolicies: Object.fromEntries(result.status.backendTLSPolicies) } : {}),
    },
  };
}

export function renderResult(result: TranslateResult): string {
  return stringify(resultData(result), { lineWidth: 0, aliasDuplicateObjects: false });
}

/** Every byte translate() produces, secrets included, for determinism checks. */
export function resultBytes(result: TranslateResult): string {
  return JSON.stringify({
    snapshots: [...result.snapshots].map(([k, s]) => [k, toWire(s)]),
    status: [...Object.entries(result.status)].map(([k, m]) => [k, [...(m as ReadonlyMap<string, unknown>)]]),
  });
}
