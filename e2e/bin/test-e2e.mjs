#!/usr/bin/env node
// `npm run test:e2e` (and `npx turbo run test:e2e -- --runtime containerd`): the harness's matrix as
// a vitest run, one test per cell, with the JSON report scripts/test-summary.mjs counts. Its flags
// become KH_RUNTIME / KH_SCENARIO / KH_CASE / KH_CONFORMANCE / KH_OUT / KH_TIMEOUT, which the test
// reads like `kubelet-harness run` does.
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    runtime: { type: 'string', short: 'r' },
    scenario: { type: 'string', short: 's' },
    case: { type: 'string' },
    conformance: { type: 'boolean' },
    out: { type: 'string', short: 'o' },
    timeout: { type: 'string' },
  },
  strict: true,
});
const env = { ...process.env, TESTCONTAINERS_RYUK_DISABLED: 'true' };
if (values.runtime) env.KH_RUNTIME = values.runtime;
if (values.scenario) env.KH_SCENARIO = values.scenario;
if (values.case) env.KH_CASE = values.case;
if (values.conformance) env.KH_CONFORMANCE = '1';
if (values.out) env.KH_OUT = values.out;
if (values.timeout) env.KH_TIMEOUT = values.timeout;

const child = spawn(
  'vitest',
  ['run', '--reporter=default', '--reporter=json', '--outputFile.json=.reports/vitest-e2e.json'],
  { stdio: 'inherit', env },
);
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 130 : 1)));
