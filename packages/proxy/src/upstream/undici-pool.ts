// undici's connection Pool without undici's index. The index also loads fetch, WebSocket,
// caches and mocks, none of which the proxy uses: about 8 MiB of its resident memory. What
// the index adds to every dispatcher, the request()/stream()/pipeline() API (request mirrors
// use request()), is added here the same way. undici is pinned to one minor version in
// package.json; the mirror tests fail if these internal paths or that API move.
import { createRequire } from 'node:module';
import type { buildConnector as BuildConnector, Dispatcher, Pool as UndiciPool } from 'undici';

const require = createRequire(import.meta.url);

const dispatcher = require('undici/lib/dispatcher/dispatcher.js') as typeof Dispatcher;
Object.assign(dispatcher.prototype, require('undici/lib/api/index.js'));

export const Pool = require('undici/lib/dispatcher/pool.js') as typeof UndiciPool;
export type Pool = UndiciPool;

export const buildConnector = require('undici/lib/core/connect.js') as typeof BuildConnector;
