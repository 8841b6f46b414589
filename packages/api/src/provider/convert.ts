// A provider block to ProviderIR: the preset's defaults applied and the key read through
// PolicySources (a file standalone, a Secret in a cluster), checked, and wrapped as a Secret at
// once. No problem quotes the key.
import { Secret } from '../secret.js';
import type { ProviderIR } from '../snapshot.js';
import type { Problem } from '../validation-error.js';
import type { ObjectKeyRef, PolicySources } from '../auth/sources.js';
import { AZURE_DEFAULT_API_VERSION, azureBasePath, MAX_PROVIDER_KEY_LENGTH, PROVIDER_PRESETS, type ProviderType } from './presets.js';

/** The fields both forms of the block share. */
export interface ProviderFields {
  readonly type: ProviderType;
  readonly basePath?: string;
  readonly deployment?: string;
  readonly apiVersion?: string;
}

/** Where the key is read: the JSON path of the reference and the reference itself. */
export interface ProviderKeyRef {
  readonly at: string;
  readonly ref: { readonly file: string } | ObjectKeyRef;
}

/** Visible ASCII: a key travels in a header as it is. */
const KEY_CHARS = /^[\x21-\x7e]+$/;

/** The cross-field rules (PROVIDER_RULES says the same to the API server). */
export function checkProvider(p: ProviderFields, at: string, problems: Problem[]): void {
  if (p.type !== 'AzureOpenAI') {
    if (p.deployment !== undefined) problems.push({ path: `${at}.deployment`, message: `is for type AzureOpenAI only; type ${p.type} has none` });
    if (p.apiVersion !== undefined) problems.push({ path: `${at}.apiVersion`, message: `is for type AzureOpenAI only; type ${p.type} has none` });
  } else if (p.deployment === undefined && p.basePath === undefined) {
    problems.push({ path: `${at}.deployment`, message: 'required field is missing: type AzureOpenAI needs the deployment requests go to (or a basePath of your own)' });
  }
  if (p.basePath !== undefined && /\/\/|(^|\/)\.\.?(\/|$)/.test(p.basePath)) {
    problems.push({ path: `${at}.basePath`, message: `got ${JSON.stringify(p.basePath)}; a base path has no empty, "." or ".." segments` });
  }
}

export function toProviderIR(p: ProviderFields, at: string, key: ProviderKeyRef | null, sources: PolicySources, problems: Problem[]): ProviderIR | null {
  const before = problems.length;
  checkProvider(p, at, problems);
  const apiKey = key ? readKey(key, sources, problems) : null;
  if (problems.length > before) return null;
  const azure = p.type === 'AzureOpenAI';
  const basePath = (p.basePath ?? (azure && p.deployment !== undefined ? azureBasePath(p.deployment) : PROVIDER_PRESETS[p.type].basePath)).replace(/\/+$/, '');
  // Azure's deployments API needs api-version; a base path of one's own (its v1 API) may not.
  const apiVersion = azure ? (p.apiVersion ?? (p.basePath === undefined ? AZURE_DEFAULT_API_VERSION : null)) : null;
  return { type: p.type, basePath, apiKey, apiVersion };
}

function readKey(key: ProviderKeyRef, sources: PolicySources, problems: Problem[]): ProviderIR['apiKey'] {
  const read = sources.text(key.at, key.ref);
  if (!read.ok) {
    problems.push(read.problem);
    return null;
  }
  const { origin, text } = read.value;
  const path = 'file' in key.ref ? `${key.at}.file` : key.at;
  const value = text.trim();
  if (!value) {
    problems.push({ path, message: `${origin} is empty: it must hold the provider key` });
    return null;
  }
  if (value.length > MAX_PROVIDER_KEY_LENGTH) {
    problems.push({ path, message: `${origin} holds ${value.length} characters, more than the ${MAX_PROVIDER_KEY_LENGTH} a provider key may have` });
    return null;
  }
  if (!KEY_CHARS.test(value)) {
    problems.push({ path, message: `${origin} holds a space, a line break or a character a header cannot carry inside the key; it must hold the key alone, in visible ASCII` });
    return null;
  }
  return { origin, value: new Secret(value) };
}
