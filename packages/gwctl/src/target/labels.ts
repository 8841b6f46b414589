// How gwctl finds pods: the Gateway API label on proxy pods, and the chart's controller labels
// (charts/tollgate/templates/_helpers.tpl, tollgate.controller.selectorLabels).
export const GATEWAY_LABEL = 'gateway.networking.k8s.io/gateway-name';
export const CONTROLLER_SELECTOR = 'app.kubernetes.io/name=tollgate,app.kubernetes.io/component=controller';
