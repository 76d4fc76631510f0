import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointBackend } from '../../src/backends/endpoint.js';
import { BackendRegistry, loadBackends } from '../../src/backends/registry.js';
import { type BackendContext, BackendUnavailableError } from '../../src/backends/types.js';
import { CONFIG_FILE, readConfig } from '../../src/support/project-config.js';
import { fakeBackend } from '../run/fakes.js';

const BUILTINS = [
  'containerd-2.1',
  'containerd-1.7',
  'containerd-1.6',
  'docker-28',
  'docker-26',
  'docker-20.10',
  'fake',
  'endpoint',
];
let dir: string;

/** A backend module as a contributor writes it, reduced to what the registry reads. */
const moduleSource = (...names: string[]) =>
  `export const backends = ${JSON.stringify(names)}.map((name) => ({
  name, description: name + ' backend', capabilities: new Set(), start: async () => { throw new Error('not here'); },
}));\n`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-registry-'));
  await writeFile(join(dir, 'one.mjs'), moduleSource('one-a', 'one-b'));
  await writeFile(join(dir, 'two.mjs'), moduleSource('two'));
  await writeFile(join(dir, 'clash.mjs'), moduleSource('docker'));
  await writeFile(join(dir, 'empty.mjs'), 'export const scenarios = [];\n');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const names = (r: BackendRegistry) => r.backends.map((b) => b.name);

describe('loadBackends', () => {
  it('registers the built-ins alone when nothing names a module', async () => {
    const registry = await loadBackends({ env: {}, cwd: dir });
    expect(names(registry)).toEqual(BUILTINS);
    expect(new Set(registry.registered.map((e) => e.module))).toEqual(new Set(['@kh/harness']));
  });

  it('adds kh.config.json, then KH_BACKENDS, then --backend modules, each once and in that order', async () => {
    const project = join(dir, 'project');
    await mkdir(join(project, 'sub'), { recursive: true });
    await writeFile(join(project, CONFIG_FILE), JSON.stringify({ backends: ['../two.mjs'] }));
    // Found from a subdirectory; its relative module path is relative to the config file.
    const registry = await loadBackends({
      env: { KH_BACKENDS: ` ${join(dir, 'one.mjs')} ,` },
      cwd: join(project, 'sub'),
      modules: [join(dir, 'one.mjs')],
    });
    expect(names(registry)).toEqual([...BUILTINS, 'two', 'one-a', 'one-b']);
    expect(registry.registered.find((e) => e.backend.name === 'two')?.module).toBe(join(dir, 'two.mjs'));
  });

  it('reads the file KH_CONFIG names instead, or none when it is empty', async () => {
    const project = join(dir, 'project');
    const other = join(dir, 'other.json');
    await writeFile(other, JSON.stringify({ backends: ['./one.mjs'] }));
    expect(names(await loadBackends({ env: { KH_CONFIG: other }, cwd: project }))).toEqual([
      ...BUILTINS,
      'one-a',
      'one-b',
    ]);
    expect(names(await loadBackends({ env: { KH_CONFIG: '' }, cwd: project }))).toEqual(BUILTINS);
  });

  it('resolves a relative --backend path against the working directory', async () => {
    const registry = await loadBackends({ env: {}, cwd: dir, modules: ['./two.mjs'] });
    expect(names(registry)).toContain('two');
  });

  it('refuses a name registered twice, also as an alias, naming both modules', async () => {
    await expect(loadBackends({ env: {}, cwd: dir, modules: ['./clash.mjs'] })).rejects.toThrow(
      'backend "docker" from ./clash.mjs is already registered by @kh/harness',
    );
  });

  it('says what is wrong with a module that cannot be loaded or has no backends', async () => {
    await expect(loadBackends({ env: {}, cwd: dir, modules: ['./empty.mjs'] })).rejects.toThrow(
      'backend module ./empty.mjs does not export `backends`',
    );
    await expect(loadBackends({ env: {}, cwd: dir, modules: ['@kh/no-such-backend'] })).rejects.toThrow(
      /^cannot load backend module @kh\/no-such-backend: /,
    );
  });

  it('names the config file when it is not what it should be', async () => {
    const bad = join(dir, 'bad');
    await mkdir(bad, { recursive: true });
    await writeFile(join(bad, CONFIG_FILE), JSON.stringify({ backends: 'one.mjs' }));
    expect(() => readConfig(bad)).toThrow(
      `${join(bad, CONFIG_FILE)}: "backends" must be an array of module names`,
    );
    await writeFile(join(bad, CONFIG_FILE), JSON.stringify({ suite: 3 }));
    expect(() => readConfig(bad)).toThrow(`${join(bad, CONFIG_FILE)}: "suite" must be a module name`);
    await writeFile(join(bad, CONFIG_FILE), '{');
    expect(() => readConfig(bad)).toThrow(join(bad, CONFIG_FILE));
  });

  it('reads the suite the config names, a relative path against the file', async () => {
    const here = join(dir, 'suite-config');
    await mkdir(here, { recursive: true });
    await writeFile(join(here, CONFIG_FILE), JSON.stringify({ suite: './my-suite.js' }));
    expect(readConfig(here)?.suite).toBe(join(here, 'my-suite.js'));
  });
});

describe('BackendRegistry', () => {
  it('keeps registration order and the module of each backend', () => {
    const registry = new BackendRegistry();
    registry.register('m1', [fakeBackend('b'), fakeBackend('a')]);
    registry.register('m2', [fakeBackend('c')]);
    expect(registry.registered.map((e) => `${e.module}:${e.backend.name}`)).toEqual(['m1:b', 'm1:a', 'm2:c']);
  });
});

describe('endpoint backend', () => {
  it('cannot run without a CRI endpoint, and says which flag gives it one', async () => {
    const start = endpointBackend(undefined).start({} as BackendContext);
    await expect(start).rejects.toBeInstanceOf(BackendUnavailableError);
    await expect(start).rejects.toThrow(
      'pass --cri-endpoint unix:///path/to/cri.sock (or set KH_CRI_ENDPOINT)',
    );
  });

  it('claims nothing that needs a node of its own', () => {
    expect([...endpointBackend('unix:///x.sock').capabilities]).toEqual(['real-containers']);
  });
});
