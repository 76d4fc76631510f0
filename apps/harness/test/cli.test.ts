import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSuite, main } from '../src/cli.js';

let dir: string;
let suitePath: string;
beforeAll(async () => {
  // Only the backends a test names: not the repository's kh.config.json modules.
  process.env.KH_CONFIG = '';
  dir = await mkdtemp(join(tmpdir(), 'kh-cli-test-'));
  suitePath = join(dir, 'suite.mjs');
  await writeFile(
    suitePath,
    "export const scenarios = [{ name: 'one', description: 'd', run: async () => {} }];\n",
  );
});
afterAll(async () => {
  delete process.env.KH_CONFIG;
  await rm(dir, { recursive: true, force: true });
});

async function cli(argv: string[]) {
  let out = '';
  let err = '';
  const code = await main(argv, {
    out: (s) => {
      out += s;
    },
    err: (s) => {
      err += s;
    },
    signal: new AbortController().signal,
  });
  return { code, out, err };
}

describe('kubelet-harness CLI', () => {
  it('prints usage; no command is a usage error', async () => {
    expect(await cli(['--help'])).toMatchObject({ code: 0, out: expect.stringContaining('Commands:') });
    expect((await cli([])).code).toBe(2);
    const unknown = await cli(['frobnicate']);
    expect(unknown).toMatchObject({ code: 2, err: expect.stringContaining('unknown command "frobnicate"') });
  });

  it('routes up and down, with their usage', async () => {
    const up = await cli(['up', '--help']);
    expect(up).toMatchObject({ code: 0, out: expect.stringContaining('--kubeconfig <path>') });
    const down = await cli(['down', '--help']);
    expect(down).toMatchObject({ code: 0, out: expect.stringContaining('kh.run label') });
    expect((await cli(['down', 'extra'])).code).toBe(2);
  });

  it('run --help explains the filters and exit codes', async () => {
    const r = await cli(['run', '--help']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('KH_RUNTIME');
    expect(r.out).toContain('130 interrupted');
  });

  it('run rejects bad flags, unknown runtimes and unknown scenarios with status 2', async () => {
    expect(await cli(['run', '--bogus'])).toMatchObject({
      code: 2,
      err: expect.stringContaining("'--bogus'"),
    });
    const rt = await cli(['run', '--suite', suitePath, '--runtime', 'cri-o', '--out', dir]);
    expect(rt).toMatchObject({ code: 2, err: expect.stringContaining('unknown runtime "cri-o"') });
    const sc = await cli([
      'run',
      '--suite',
      suitePath,
      '--runtime',
      'fake',
      '--scenario',
      'two',
      '--out',
      dir,
    ]);
    expect(sc).toMatchObject({ code: 2, err: expect.stringContaining('unknown scenario "two"; known: one') });
  });

  it("list names a scenario's declared cases with their labels, as --case matches them", async () => {
    const cases = join(dir, 'cases.mjs');
    await writeFile(
      cases,
      `export const scenarios = [{ name: 'probing', description: 'd', cases: [
  { name: 'Probing container should be restarted with a /healthz http liveness probe', file: 'container_probe.go', tags: ['NodeConformance', 'Conformance'], run: async () => {} },
  { name: 'our own check', run: async () => {} },
] }];\n`,
    );
    const json = JSON.parse((await cli(['list', '--json', '--suite', cases])).out) as {
      scenarios: unknown[];
    };
    expect(json.scenarios).toEqual([
      {
        name: 'probing',
        description: 'd',
        needs: [],
        cases: [
          {
            name: 'Probing container should be restarted with a /healthz http liveness probe',
            tags: ['NodeConformance', 'Conformance'],
            file: 'container_probe.go',
          },
          { name: 'our own check', tags: [] },
        ],
      },
    ]);
    const text = (await cli(['list', '--suite', cases])).out;
    expect(text).toContain(
      '  probing            d\n      Probing container should be restarted with a /healthz http liveness probe [NodeConformance] [Conformance]\n      our own check\n',
    );
  });

  it('run fails clearly on a suite module without scenarios', async () => {
    const bad = join(dir, 'bad.mjs');
    await writeFile(bad, 'export const nothing = 1;\n');
    const r = await cli(['run', '--suite', bad]);
    expect(r).toMatchObject({ code: 2, err: expect.stringContaining('does not export `scenarios`') });
  });

  it('loads a suite from a path', async () => {
    expect((await loadSuite(suitePath)).map((s) => s.name)).toEqual(['one']);
  });

  it('list --json gives every registered backend with its module, --backend adding one', async () => {
    const mod = join(dir, 'backend.mjs');
    await writeFile(
      mod,
      "export const backends = [{ name: 'mine', description: 'my runtime', capabilities: new Set(['real-containers']), start: async () => ({}) }];\n",
    );
    const r = await cli(['list', '--json', '--backend', mod, '--suite', suitePath]);
    expect(r.code).toBe(0);
    const listed = JSON.parse(r.out) as { runtimes: unknown[]; scenarios: unknown[] };
    expect(listed.runtimes).toEqual([
      expect.objectContaining({ name: 'containerd-2.1', release: 'forky', default: false, aliases: [] }),
      expect.objectContaining({
        name: 'containerd-1.7',
        release: 'trixie',
        default: true,
        aliases: ['containerd'],
      }),
      expect.objectContaining({ name: 'containerd-1.6', release: 'bookworm', module: '@kh/harness' }),
      expect.objectContaining({ name: 'docker-28', module: '@kh/harness' }),
      expect.objectContaining({ name: 'docker-26', aliases: ['docker'], module: '@kh/harness' }),
      expect.objectContaining({ name: 'docker-20.10', module: '@kh/harness' }),
      expect.objectContaining({ name: 'fake', module: '@kh/harness', capabilities: [] }),
      expect.objectContaining({ name: 'endpoint', module: '@kh/harness' }),
      {
        name: 'mine',
        aliases: [],
        default: true,
        description: 'my runtime',
        capabilities: ['real-containers'],
        module: mod,
      },
    ]);
    expect(listed.scenarios).toEqual([{ name: 'one', description: 'd', needs: [] }]);
    const text = await cli(['list', '--backend', mod, '--suite', suitePath]);
    expect(text.out).toMatch(/^\* mine +my runtime \(.*backend\.mjs\)$/m);
    expect(text.out).toMatch(/^\* containerd-1\.7 +containerd 1\.7 .*\[also: containerd\]/m);
    expect(text.out).toMatch(/^ {2}docker-20\.10 +dockerd 20\.10 .*Debian 12 bookworm/m);
  });

  it('run without a suite says where to name one, with status 2; the config file names it', async () => {
    const r = await cli(['run', '--runtime', 'fake', '--out', dir]);
    expect(r).toMatchObject({
      code: 2,
      err: expect.stringContaining(
        'no scenario suite: pass --suite <module>, or name one as "suite" in kh.config.json',
      ),
    });
    const config = join(dir, 'kh-suite.json');
    await writeFile(config, JSON.stringify({ suite: './suite.mjs' }));
    process.env.KH_CONFIG = config;
    try {
      const listed = await cli(['list', '--json']);
      expect(JSON.parse(listed.out).scenarios).toEqual([{ name: 'one', description: 'd', needs: [] }]);
    } finally {
      process.env.KH_CONFIG = '';
    }
  });

  it('run names a backend module it cannot load, with status 2', async () => {
    const r = await cli(['run', '--suite', suitePath, '--backend', join(dir, 'nope.mjs'), '--out', dir]);
    expect(r).toMatchObject({ code: 2, err: expect.stringContaining('cannot load backend module') });
  });

  it('keeps `report` as a subcommand', async () => {
    const r = await cli(['report', '--input', join(dir, 'missing.json'), '--out', join(dir, 'r.html')]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('missing.json');
  });
});
