// A pino logger whose lines are kept as objects, for tests that assert on what was logged.
export { captureLog, type LogLine } from '@tollgate/testkit';
