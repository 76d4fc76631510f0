import { type ChildProcess, spawn } from 'node:child_process';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CriClient } from '../src/index.js';
import { tempDir } from './helpers.js';

// The bin runs from the build output, exactly as `npx fake-cri` would.
const cli = path.resolve(import.meta.dirname, '../dist/fake/cli.js');

function run(args: string[]): { child: ChildProcess; output: () => string; exit: Promise<number | null> } {
  const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exit };
}

describe('fake-cri CLI', () => {
  let running: ChildProcess | undefined;

  beforeAll(async () => {
    await access(cli).catch(() => {
      throw new Error(`${cli} is missing: run \`npx turbo run build --filter=@kh/cri-api\` first`);
    });
  });

  afterEach(() => {
    running?.kill('SIGKILL');
    running = undefined;
  });

  it('serves the fake runtime on --listen until SIGTERM', async () => {
    const tmp = await tempDir();
    const sock = tmp.sock('fake.sock');
    const proc = run(['--listen', `unix://${sock}`, '--image', 'busybox:1=4096']);
    running = proc.child;
    await expect.poll(proc.output, { timeout: 10_000 }).toContain(`fake-cri listening on unix://${sock}`);
    const cri = await CriClient.connect(`unix://${sock}`);
    expect((await cri.version({})).runtimeName).toBe('fake-cri');
    const images = await cri.listImages({});
    expect(images.images.map((i) => [i.repoTags[0], i.size])).toEqual([
      ['docker.io/library/busybox:1', 4096n],
    ]);
    cri.close();
    proc.child.kill('SIGTERM');
    expect(await proc.exit).toBe(0);
    await expect(stat(sock)).rejects.toThrow(/ENOENT/);
    await tmp.remove();
  });

  it('explains bad arguments and exits 1', async () => {
    const noListen = run([]);
    expect(await noListen.exit).toBe(1);
    expect(noListen.output()).toContain('--listen is required');
    const badImage = run(['--listen', 'tcp://127.0.0.1:0', '--image', 'busybox']);
    expect(await badImage.exit).toBe(1);
    expect(badImage.output()).toContain('--image wants <ref>=<sizeBytes>, got "busybox"');
    const badScheme = run(['--listen', 'http://x:1']);
    expect(await badScheme.exit).toBe(1);
    expect(badScheme.output()).toContain('unsupported scheme "http"');
  });
});
