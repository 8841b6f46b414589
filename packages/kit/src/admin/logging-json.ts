// /logging, the controller's JSON per-component contract (docs/admin-api.md, "Controller admin
// API"): GET answers {"levels": {<component>: <level>}}; POST ?level=<level> sets every
// component, POST ?component=<c>&level=<level> sets one, both answering the levels after the
// change. Errors are 400 with one line of text and change nothing.
import { LOG_LEVELS } from '@tollgate/api';
import type { FastifyInstance } from 'fastify';
import { KIT_ERRORS } from '../errors/catalog.js';
import { isLevel } from '../log/directive.js';
import type { LogControl } from '../log/log-control.js';
import { queryKeys, single } from './query.js';
import { replyError } from './reply.js';

export interface JsonLoggingOptions<C extends string> {
  readonly logs: LogControl<C>;
  readonly onChange?: (levels: Record<C, string>) => void;
}

export function jsonLoggingRoutes<C extends string>(app: FastifyInstance, { logs, onChange }: JsonLoggingOptions<C>): void {
  const levels = () => ({ levels: logs.levels() });
  const unknownQuery = (query: unknown) => queryKeys(query).filter((k) => k !== 'level' && k !== 'component');
  app.get('/logging', { config: { index: 'log level of every component' } }, async (request, reply) => {
    const unknown = unknownQuery(request.query);
    const keys = queryKeys(request.query);
    if (keys.length) return replyError(reply, KIT_ERRORS.adminUnknownQuery, { names: (unknown.length ? unknown : keys).join(', '), expected: 'GET /logging takes no query parameters' });
    return reply.send(levels());
  });
  app.post('/logging', { config: { index: '?level=&lt;level&gt; for every component, ?component=&lt;c&gt;&amp;level=&lt;level&gt; for one' } }, async (request, reply) => {
    const unknown = unknownQuery(request.query);
    if (unknown.length) return replyError(reply, KIT_ERRORS.adminUnknownQuery, { names: unknown.join(', '), expected: 'expected level, component' });
    const q = request.query as Record<string, unknown>;
    const level = single(q.level);
    const component = single(q.component);
    if (level === undefined || level === null) return replyError(reply, KIT_ERRORS.logLevelMissing, { expected: `?level=<level> (${LOG_LEVELS.join(', ')})` });
    if (!isLevel(level)) return replyError(reply, KIT_ERRORS.logLevelInvalid, { level });
    if (component === null || (component !== undefined && !(logs.components as readonly string[]).includes(component))) {
      return replyError(reply, KIT_ERRORS.logComponentUnknown, { component: String(component), components: logs.components.join(', ') });
    }
    if (component === undefined) logs.setAll(level);
    else logs.setOne(component as C, level);
    onChange?.(logs.levels());
    return reply.send(levels());
  });
}
