/** Served by `GET /v1/models` when no model names are configured; any requested model is accepted then. */
export const DEFAULT_MODELS: readonly string[] = ['mock-gpt'];

/** A fixed timestamp keeps `/v1/models` byte-identical across runs. */
const CREATED = 1_700_000_000;

export function modelObject(id: string): { id: string; object: 'model'; created: number; owned_by: string } {
  return { id, object: 'model', created: CREATED, owned_by: 'tollgate' };
}

export function modelList(models: readonly string[]): string {
  return JSON.stringify({ object: 'list', data: models.map(modelObject) });
}
