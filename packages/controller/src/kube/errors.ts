// One line describing a failed API call, for logs: the HTTP status and the API server's
// message (a Status object's `message`), never a whole response or request.
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
