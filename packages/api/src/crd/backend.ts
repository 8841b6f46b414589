// The Backend CustomResourceDefinition, generated from BackendSpec and BackendStatus the same
// way as GatewayPolicy's (./gateway-policy.ts); written by the same `gen:crds`.
import { yaml } from '../yaml.js';
import { BackendSpec, BackendStatus } from '../schema/backend.js';
import { CRD_REGENERATE_COMMAND, POLICY_GROUP, servedVersion } from './gateway-policy.js';
import { toStructural, type JsonSchema } from './structural.js';

export const BACKEND_KIND = 'Backend';
export const BACKEND_PLURAL = 'backends';

export const BACKEND_CRD_FILES = ['crds/tollgate.dev_backends.yaml', 'charts/tollgate/crds/tollgate.dev_backends.yaml'] as const;

export function backendCrd(): JsonSchema {
  const status = toStructural(BackendStatus, 'status');
  const conditions = (status.properties as Record<string, JsonSchema>).conditions as JsonSchema;
  conditions['x-kubernetes-list-type'] = 'map';
  conditions['x-kubernetes-list-map-keys'] = ['type'];
  const openAPIV3Schema = {
    description:
      'Backend is a host name (or address) and port that HTTPRoutes send requests to (backendRef group tollgate.dev, kind Backend): an LLM provider outside the cluster or a model server in it, with TLS, and the provider key the gateway sends it.',
    type: 'object',
    properties: {
      apiVersion: { description: 'Versioned schema of this representation of an object: tollgate.dev/v1alpha1.', type: 'string' },
      kind: { description: 'REST resource this object represents: Backend.', type: 'string' },
      metadata: { type: 'object' },
      spec: toStructural(BackendSpec, 'spec'),
      status,
    },
    required: ['spec'],
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${BACKEND_PLURAL}.${POLICY_GROUP}`, labels: { 'app.kubernetes.io/part-of': 'tollgate' } },
    spec: {
      group: POLICY_GROUP,
      names: { kind: BACKEND_KIND, listKind: `${BACKEND_KIND}List`, plural: BACKEND_PLURAL, singular: BACKEND_KIND.toLowerCase(), categories: ['tollgate'] },
      scope: 'Namespaced',
      versions: [
        servedVersion(
          [
            { name: 'Host', type: 'string', jsonPath: '.spec.hostname' },
            { name: 'Port', type: 'integer', jsonPath: '.spec.port' },
            { name: 'Provider', type: 'string', jsonPath: '.spec.provider.type' },
            { name: 'Accepted', type: 'string', jsonPath: '.status.conditions[?(@.type=="Accepted")].status' },
          ],
          openAPIV3Schema,
        ),
      ],
    },
  };
}

export function renderBackendCrdYaml(): string {
  const header = ['# Backend CustomResourceDefinition.', `# Generated from packages/api (BackendSpec, BackendStatus) by \`${CRD_REGENERATE_COMMAND}\`.`, '# Do not edit: change the schema and regenerate.'].join('\n');
  return `${header}\n---\n${yaml().stringify(backendCrd(), { lineWidth: 0, aliasDuplicateObjects: false })}`;
}
