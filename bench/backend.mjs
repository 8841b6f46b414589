// The fixed-response backend every proxy case forwards to: a plain node:http server that
// answers each request with the same small body, so the bench measures the proxy in front
// of it and not the backend. Run by bench/run.mjs in its own process.
//   node bench/backend.mjs [--port 0] [--host 127.0.0.1]
// Prints one line: `backend listening on http://<host>:<port>`.
import http from 'node:http';
import { parseArgs } from 'node:util';
import { FIXED_BODY } from './lib/requests.mjs';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, host: { type: 'string', default: '127.0.0.1' } },
});

const body = Buffer.from(FIXED_BODY);
const headers = { 'content-type': 'text/plain; charset=utf-8', 'content-length': String(body.length) };

const server = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, headers);
  res.end(body);
});
// Proxies keep upstream connections open; do not let the backend close them mid-run.
server.keepAliveTimeout = 120_000;
server.headersTimeout = 121_000;

server.listen(Number(values.port), values.host, () => {
  const addr = server.address();
  process.stdout.write(`backend listening on http://${values.host}:${addr.port}\n`);
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
