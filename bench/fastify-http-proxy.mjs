// The peer baseline: bare @fastify/http-proxy with its defaults, proxying every path to one
// upstream, logger off. Run by bench/run.mjs in its own process.
//   node bench/fastify-http-proxy.mjs --upstream http://127.0.0.1:<port> [--port 0]
// Prints one line: `fastify-http-proxy listening on http://127.0.0.1:<port>`.
import proxy from '@fastify/http-proxy';
import Fastify from 'fastify';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    upstream: { type: 'string' },
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});
if (!values.upstream) {
  process.stderr.write('fastify-http-proxy: missing --upstream http://host:port\n');
  process.exit(2);
}

const app = Fastify({ logger: false });
await app.register(proxy, { upstream: values.upstream });
const address = await app.listen({ port: Number(values.port), host: values.host });
process.stdout.write(`fastify-http-proxy listening on ${address}\n`);

const stop = () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
