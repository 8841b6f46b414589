// The official Python `openai` client (PyPI), for tests of what a real OpenAI client makes of
// the gateway's answers. scripts/install-test-tools.sh (install_python_openai) installs the
// version pinned in e2e/tools.json (pythonOpenai) into a venv in the tool cache; the tests run
// its python.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

export function pythonOpenaiPath(): string {
  const tools = JSON.parse(readFileSync(join(REPO_ROOT, 'e2e/tools.json'), 'utf8')) as Record<string, string>;
  const cache = process.env.TOLLGATE_CACHE ?? join(homedir(), '.cache', 'tollgate');
  return join(cache, `python-openai-${tools.pythonOpenai}`, 'python');
}

/** Whether it is there: in CI a missing client is an error; elsewhere the test is skipped, saying how to install it. */
export function pythonOpenaiAvailability(): { run: boolean } {
  if (existsSync(pythonOpenaiPath())) return { run: true };
  const message = `the Python openai client is not installed: ${pythonOpenaiPath()} (run \`bash scripts/install-test-tools.sh\`)`;
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(message);
  console.warn(`skipping: ${message}`);
  return { run: false };
}
