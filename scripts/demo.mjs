#!/usr/bin/env node
// The demo: mock-llm on 127.0.0.1:9000 and the gateway on examples/standalone.yaml (port 3000,
// admin 127.0.0.1:15000), in the foreground until Ctrl-C. Prints requests to try.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const children = [];

function start(name, args, ready) {
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const rl = createInterface({ input: child.stdout });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name} exited with code ${code} before it was ready`)));
    rl.on('line', (line) => {
      process.stdout.write(`[${name}] ${line}\n`);
      if (ready(line)) resolve(child);
    });
  });
}

function stop(code) {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  process.exitCode = code;
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

try {
  await start('mock-llm', ['packages/mock-llm/bin/mock-llm.js', '--port', '9000'], (l) => l.startsWith('mock-llm listening on'));
  await start('tollgate', ['packages/proxy/bin/tollgate.js', '--file', 'examples/standalone.yaml'], (l) => l.includes('bind 0.0.0.0:3000 listening'));
  process.stdout.write(`
Tollgate is serving examples/standalone.yaml on http://127.0.0.1:3000 (admin http://127.0.0.1:15000).
Try:
  curl -s http://127.0.0.1:3000/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"mock-gpt","messages":[{"role":"user","content":"Hello, gateway"}]}'
  curl -sN http://127.0.0.1:3000/v1/chat/completions -H 'content-type: application/json' \\
    -d '{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"Stream please"}]}'
  curl -si http://127.0.0.1:3000/http/v1/models
  curl -s http://127.0.0.1:15000/config_dump
Edit examples/standalone.yaml while this runs: the gateway reloads it. Ctrl-C stops both.
`);
} catch (err) {
  process.stderr.write(`demo: ${err.message}\n`);
  stop(1);
}
for (const c of children) c.on('exit', (code) => { if (!process.exitCode && code) stop(code); });
