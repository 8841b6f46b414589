// The GatewayPolicy CustomResourceDefinition, generated from GatewayPolicySpec (the same
// schema the controller and the standalone proxy validate with) plus the status schema in
// ./status.ts. `pnpm --filter @tollgate/api gen:crds` writes it to crds/ and to the Helm
// chart; packages/api/test/crd.test.ts fails when the committed YAML is stale.
import { yaml } from '../yaml.js';
import { GatewayPolicySpec } from '../schema/traffic-policy.js';
import { GatewayPolicyStatus } from './status.js';
import { toStructural, type JsonSchema } from './structural.js';

export const POLICY_GROUP = 'tollgate.dev';
export const POLICY_VERSION = 'v1alpha1';
export const POLICY_KIND = 'GatewayPolicy';
export const POLICY_PLURAL = 'gatewaypolicies';
export const POLICY_SHORT_NAME = 'gwpol';

/** Where the generated file lives, relative to the repository root. */
export const CRD_FILES = ['crds/tollgate.dev_gatewaypolicies.yaml', 'charts/tollgate/crds/tollgate.dev_gatewaypolicies.yaml'] as const;

export const CRD_REGENERATE_COMMAND = 'pnpm --filter @tollgate/api gen:crds';

function conditionStatusColumn(type: string, description: string) {
  return {
    name: type,
    type: 'string',
    description,
    jsonPath: `.status.ancestors[*].conditions[?(@.type=="${type}")].status`,
  };
}

/** The one version of a Tollgate CRD: served, stored, with a status subresource; `columns` before Age. */
export function servedVersion(columns: readonly JsonSchema[], openAPIV3Schema: JsonSchema): JsonSchema {
  return {
    name: POLICY_VERSION,
    served: true,
    storage: true,
    subresources: { status: {} },
    additionalPrinterColumns: [...columns, { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }],
    schema: { openAPIV3Schema },
  };
}

export function gatewayPolicyCrd(): JsonSchema {
  const spec = toStructural(GatewayPolicySpec, 'spec');
  const status = toStructural(GatewayPolicyStatus, 'status');
  markStatusLists(status);

  const openAPIV3Schema = {
    description:
      'GatewayPolicy attaches traffic policies (request and LLM token rate limits) to Gateways, HTTPRoutes and GRPCRoutes of the Kubernetes Gateway API. A policy targeting a Gateway applies to every route of it; one targeting an HTTPRoute or a GRPCRoute applies to that route.',
    type: 'object',
    properties: {
      apiVersion: {
        description: 'Versioned schema of this representation of an object: tollgate.dev/v1alpha1.',
        type: 'string',
      },
      kind: {
        description: 'REST resource this object represents: GatewayPolicy.',
        type: 'string',
      },
      metadata: { type: 'object' },
      spec,
      status,
    },
    required: ['spec'],
  };

  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${POLICY_PLURAL}.${POLICY_GROUP}`,
      labels: {
        'app.kubernetes.io/part-of': 'tollgate',
        // GEP-713: a Direct policy attaches to exactly the objects named in targetRefs.
        'gateway.networking.k8s.io/policy': 'Direct',
      },
    },
    spec: {
      group: POLICY_GROUP,
      names: {
        kind: POLICY_KIND,
        listKind: `${POLICY_KIND}List`,
        plural: POLICY_PLURAL,
        singular: POLICY_KIND.toLowerCase(),
        shortNames: [POLICY_SHORT_NAME],
        categories: ['tollgate'],
      },
      scope: 'Namespaced',
      versions: [
        servedVersion(
          [
            conditionStatusColumn('Accepted', 'Whether the policy is valid and its targets exist, per ancestor.'),
            conditionStatusColumn('Attached', "Whether the policy is part of its Gateway's configuration (its target is attached), per ancestor."),
          ],
          openAPIV3Schema,
        ),
      ],
    },
  };
}

/** Conditions are a map keyed by type (server-side apply merges them per type); ancestors are replaced whole. */
function markStatusLists(status: JsonSchema): void {
  const ancestors = (status.properties as Record<string, JsonSchema>).ancestors as JsonSchema;
  ancestors['x-kubernetes-list-type'] = 'atomic';
  const item = ancestors.items as JsonSchema;
  const conditions = (item.properties as Record<string, JsonSchema>).conditions as JsonSchema;
  conditions['x-kubernetes-list-type'] = 'map';
  conditions['x-kubernetes-list-map-keys'] = ['type'];
}

export function renderCrdYaml(crd: JsonSchema = gatewayPolicyCrd()): string {
  const header = [
    '# GatewayPolicy CustomResourceDefinition.',
    `# Generated from packages/api (GatewayPolicySpec, src/crd/status.ts) by \`${CRD_REGENERATE_COMMAND}\`.`,
    '# Do not edit: change the schema and regenerate.',
  ].join('\n');
  return `${header}\n---\n${yaml().stringify(crd, { lineWidth: 0, aliasDuplicateObjects: false })}`;
}
