// The CLIs as a new user calls them (issue 18): on a fresh clone, after `npm ci`, `npx <bin>`
// resolves to the committed shim (packages/*/bin, scripts/run-bin.mjs) — before the build with a
// message saying to build, after it running the CLI. The clone is of the committed HEAD; npm runs
// offline from the cache the repository's own `npm ci` filled. The README's build step is stood in
// for by this checkout's own build output (dist/ of every workspace), which the other tests use too.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../src/node/project.js';

const run = promisify(execFile);
const root = projectRoot();
let clone: string;

/** Every workspace folder that has a package.json: packages/*, apps/*, backends/*, e2e. */
async function workspaces(base: string): Promise<string[]> {
  const out = ['e2e'];
  for (const group of ['packages', 'apps', 'backends']) {
    const entries = await readdir(join(base, group)).catch(() => []);
    for (const e of entries) if (existsSync(join(base, group, e, 'package.json'))) out.push(`${group}/${e}`);
  }
  return out;
}

beforeAll(async () => {
  clone = await mkdtemp(join(tmpdir(), 'kh-clone-'));
  await run('git', ['clone', '--quiet', root, clone]);
  await run('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: clone,
    maxBuffer: 16 << 20,
  });
}, 600_000);
afterAll(async () => {
  await rm(clone, { recursive: true, force: true });
  process.stderr.write(`removed ${clone}\n`);
}, 120_000);

/** `npx <args>` in the clone, never reaching a registry; exit code and output. */
async function npx(...args: string[]) {
  try {
    const { stdout, stderr } = await run('npx', args, {
      cwd: clone,
      env: { ...process.env, npm_config_offline: 'true' },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const CALLS: [string, string[], RegExp][] = [
  ['kubelet-harness', ['list'], /^runtimes \(\* in the default matrix[^\n]*\n[ *] containerd-\d/],
  ['cri-conformance', ['--help'], /^Usage: cri-conformance /],
  ['dockershim', ['--help'], /^Usage: dockershim /],
  ['fake-apiserver', ['--help'], /^Usage: fake-apiserver /],
];

// npx starts npm first: seconds each on a loaded machine.
describe('npx on a fresh clone', () => {
  it('npm ci links every workspace bin to its committed shim', async () => {
    for (const ws of await workspaces(clone)) {
      const pkg = JSON.parse(readFileSync(join(clone, ws, 'package.json'), 'utf8'));
      for (const [name, target] of Object.entries<string>(pkg.bin ?? {})) {
        expect(target, `${ws}: ${name}`).toBe(`./bin/${name}.js`);
        expect(existsSync(join(clone, 'node_modules/.bin', name)), name).toBe(true);
      }
    }
  });

  it.each(CALLS)(
    'before the build, npx %s says to build first',
    async (bin, args) => {
      const r = await npx(bin, ...args);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`${bin}: \\S+/dist/\\S+ is not built yet; run \`npm run build\``));
    },
    60_000,
  );

  it.each(CALLS)(
    'after the build, npx %s %s runs the CLI',
    async (bin, args, output) => {
      for (const ws of await workspaces(clone)) {
        if (existsSync(join(root, ws, 'dist')) && !existsSync(join(clone, ws, 'dist')))
          await cp(join(root, ws, 'dist'), join(clone, ws, 'dist'), { recursive: true });
      }
      const r = await npx(bin, ...args);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(output);
    },
    120_000,
  );
});
