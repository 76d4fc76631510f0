import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';

const source = join(import.meta.dirname, '..', 'src', 'util', 'interrupt.ts');
let dir: string | undefined;
afterEach(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

/** A child that registers teardowns (each appends its name to a file), says ready, and waits. */
async function interruptChild(body: string, signal: NodeJS.Signals) {
  dir = await mkdtemp(join(tmpdir(), 'kh-interrupt-'));
  const log = join(dir, 'log');
  const script = `
    import { appendFileSync } from 'node:fs';
    import { cleanUpOnInterrupt } from ${JSON.stringify(source)};
    const note = (name) => async () => { await new Promise((r) => setTimeout(r, 20)); appendFileSync(${JSON.stringify(log)}, name + '\\n'); };
    ${body}
    setInterval(() => {}, 1000);
    console.log('ready');`;
  const child = spawn(
    process.execPath,
    ['--experimental-strip-types', '--no-warnings', '--input-type=module', '-e', script],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => (d.toString().includes('ready') ? resolve() : undefined));
    child.once('exit', (code) => reject(new Error(`child exited ${code}`)));
  });
  child.kill(signal);
  const [code, sig] = await new Promise<[number | null, NodeJS.Signals | null]>((r) =>
    child.once('exit', (c, s) => r([c, s])),
  );
  const ran = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  return { code, sig, ran };
}

it('runs the teardowns not yet released, newest first, then exits 130', async () => {
  const r = await interruptChild(
    `cleanUpOnInterrupt(note('node')); const done = cleanUpOnInterrupt(note('done-already')); cleanUpOnInterrupt(note('shim')); await done();
     // The interrupted work's error path exits at once: the teardown must still finish.
     process.on('SIGTERM', () => process.exit(1));`,
    'SIGTERM',
  );
  expect(r).toEqual({ code: 130, sig: null, ran: ['done-already', 'shim', 'node'] });
});

it('runs a teardown once, and leaves the signal alone once every teardown has run', async () => {
  const r = await interruptChild(`const t = cleanUpOnInterrupt(note('a')); await t(); await t();`, 'SIGINT');
  expect(r).toEqual({ code: null, sig: 'SIGINT', ran: ['a'] });
});
