// The settings of a Gateway's proxies where neither its class's nor its own parameters (nor
// its annotations) set anything. Read by translation (a parameters ConfigMap is checked over
// them), by the deployer (rendered where nothing overrides them) and by Programmed (the
// replicas a Gateway asked for).
import type { ProxySettings } from './overrides.js';

export const DEFAULT_PROXY_SETTINGS: ProxySettings = {
  replicas: 1,
  resources: { requests: { cpu: '100m', memory: '192Mi' }, limits: { memory: '512Mi' } },
};
