// What a failed API call says: its HTTP status, for the code that decides on it (404: gone,
// 409: conflict), and one line for logs: the status and the API server's message (a Status
// object's `message`), never a whole response or request.
import { ApiException } from '@kubernetes/client-node';

/** The HTTP status of a failed API call (the client's ApiException, or raw-get's), if it has one. */
export function statusCode(err: unknown): number | undefined {
  if (err instanceof ApiException) return err.code;
  const code = (err as { code?: unknown; statusCode?: unknown } | null)?.code ?? (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export function describeApiError(err: unknown, max = 500): string {
  if (err === null || typeof err !== 'object') return String(err).slice(0, max);
  const e = err as { code?: unknown; statusCode?: unknown; body?: unknown; message?: unknown };
  const status = typeof e.code === 'number' ? e.code : typeof e.statusCode === 'number' ? e.statusCode : undefined;
  let detail = '';
  if (typeof e.body === 'string') {
    try {
      const parsed = JSON.parse(e.body) as { message?: unknown };
      detail = typeof parsed.message === 'string' ? parsed.message : e.body;
    } catch {
      detail = e.body;
    }
  } else if (e.body && typeof e.body === 'object' && typeof (e.body as { message?: unknown }).message === 'string') {
    detail = (e.body as { message: string }).message;
  }
  if (!detail) detail = typeof e.message === 'string' ? e.message.split('\n')[0]! : '';
  return `${status !== undefined ? `HTTP ${status}: ` : ''}${detail}`.slice(0, max);
}

export interface ApiErrorCause {
  readonly field: string;
  readonly message: string;
}

/** The field errors of a refused write (a Status object's details.causes), at most `max` of them. */
export function apiErrorCauses(err: unknown, max = 8): ApiErrorCause[] {
  const body = (err as { body?: unknown } | null)?.body;
  let status: unknown = body;
  if (typeof body === 'string') {
    try {
      status = JSON.parse(body);
    } catch {
      return [];
    }
  }
  const causes = (status as { details?: { causes?: unknown } } | null)?.details?.causes;
  if (!Array.isArray(causes)) return [];
  return causes
    .slice(0, max)
    .map((c: { field?: unknown; message?: unknown }) => ({ field: typeof c?.field === 'string' ? c.field : '', message: typeof c?.message === 'string' ? c.message : '' }));
}
