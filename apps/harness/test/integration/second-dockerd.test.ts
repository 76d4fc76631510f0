// The second engine of the sharded test must not meet a leftover of a killed run: the leftover's
// bridge on the same subnet reset every connection to the new engine's containers (CI, twice).
import { execFile, spawn } from 'node:child_process';
import { access, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { bridgeOf, ruleFor, type SecondDockerd, startSecondDockerd } from './second-dockerd.js';

const run = promisify(execFile);
const leftovers: (() => Promise<unknown>)[] = [];
let engine: SecondDockerd | undefined;
afterAll(async () => {
  await engine?.stop();
  for (const undo of leftovers) await undo().catch(() => undefined);
});

const rules = async () =>
  (await run('iptables', ['-S', 'DOCKER-USER'])).stdout
    .split('\n')
    .filter((l) => l.includes('kh-test-second-dockerd'));

async function engineFacts(e: SecondDockerd) {
  const dir = e.host.replace(/^unix:\/\//, '').replace(/\/docker\.sock$/, '');
  const cidr = await readFile(join(dir, 'cidr'), 'utf8');
  const bridge = bridgeOf(dir);
  await run('ip', ['link', 'show', bridge]);
  expect(await rules()).toContainEqual(expect.stringContaining(cidr));
  return { dir, cidr, bridge };
}

it("reaps a killed test's engine, takes a subnet of its own, and leaves nothing when stopped", async () => {
  // What a test killed mid-run leaves: its directory, a running "dockerd" (a stand-in whose command
  // line names the directory, as dockerd's does), its bridge on the first subnet, and its rule.
  const dir = await mkdtemp(join(tmpdir(), 'kh-d2-'));
  const bridge = bridgeOf(dir);
  const deadOwner = spawn('true');
  await new Promise((r) => deadOwner.once('exit', r));
  const daemon = spawn('sh', ['-c', 'sleep 600', join(dir, 'data')], { stdio: 'ignore', detached: true });
  daemon.unref();
  leftovers.push(async () => daemon.kill('SIGKILL'));
  leftovers.push(() => run('ip', ['link', 'del', bridge]));
  await writeFile(join(dir, 'owner'), String(deadOwner.pid));
  await writeFile(join(dir, 'docker.pid'), String(daemon.pid));
  await writeFile(join(dir, 'cidr'), '10.213.0.0/20');
  await run('ip', ['link', 'add', bridge, 'type', 'bridge']);
  await run('ip', ['addr', 'add', '10.213.15.1/24', 'dev', bridge]);
  const leftoverRule = ruleFor('10.213.0.0/20');
  await run('iptables', ['-I', ...leftoverRule]);
  leftovers.push(() => run('iptables', ['-D', ...leftoverRule]));

  engine = await startSecondDockerd();
  const exited = daemon.exitCode !== null || daemon.signalCode !== null;
  expect(exited || (await new Promise((r) => daemon.once('exit', () => r(true))))).toBe(true);
  await expect(access(dir)).rejects.toThrow();
  await expect(run('ip', ['link', 'show', bridge])).rejects.toThrow();
  // The leftover's rule went; the subnet it freed may be this engine's now.
  const mine = await engineFacts(engine);
  const onFirstSubnet = (await rules()).filter((r) => r.includes('10.213.0.0/20'));
  expect(onFirstSubnet).toHaveLength(mine.cidr === '10.213.0.0/20' ? 1 : 0);
  const { stdout } = await run('docker', ['info', '--format', '{{.ID}}'], {
    env: { ...process.env, DOCKER_HOST: engine.host },
  });
  expect(stdout.trim()).not.toBe('');

  // Engines alongside (this one, the sharded test's) each get a subnet of their own.
  const other = await startSecondDockerd();
  const own = [mine, await engineFacts(other)];
  await other.stop();
  expect(own[0]?.cidr).not.toBe(own[1]?.cidr);
  await engine.stop();
  engine = undefined;
  for (const e of own) {
    await expect(access(e.dir)).rejects.toThrow();
    await expect(run('ip', ['link', 'show', e.bridge])).rejects.toThrow();
    expect(await rules()).not.toContainEqual(expect.stringContaining(e.cidr));
  }
}, 120_000);
