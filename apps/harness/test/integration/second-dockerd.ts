// A second Docker engine on this machine, on its own unix socket, standing in for a remote engine
// (DOCKER_HOST=unix:///…/docker.sock). Everything it needs is its own: data, exec root, pid file,
// containerd namespace, a default bridge the test creates (not `--bridge=none`: dockerd then
// deletes the host's docker0, which the first engine owns), and an address range of its own.
// It leaves iptables alone (two daemons would rewrite each other's chains); one ACCEPT rule in
// DOCKER-USER lets its containers reach each other through the host's FORWARD DROP policy.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { done, notYet, until, withFileLock } from '@kh/testkit';
import { defaultLockDir } from '../../src/run/exclusive.js';
import { alive } from '../../src/world/ledger.js';

const run = promisify(execFile);

/**
 * Each engine takes one free /20 of 10.213.0.0/16 (the first engine uses 172.x): its networks come
 * from the /20's first /21 and its bridge is the /20's last /24. Two engines on one subnet (one
 * leaked by a killed test) route each other's replies and reset connections, so no two share one.
 */
const SLOTS = 16;
function engineNet(slot: number) {
  const third = slot * 16;
  return {
    cidr: `10.213.${third}.0/20`,
    pool: `10.213.${third}.0/21`,
    bridgeCidr: `10.213.${third + 15}.1/24`,
  };
}
export const ruleFor = (cidr: string) => [
  'DOCKER-USER',
  ...['-s', cidr, '-d', cidr],
  ...['-m', 'comment', '--comment', 'kh-test-second-dockerd', '-j', 'ACCEPT'],
];
const DIR_PREFIX = 'kh-d2-';
export const bridgeOf = (dir: string) => `khd2${dir.slice(-6).replace(/[^a-zA-Z0-9]/g, '')}`;

export interface SecondDockerd {
  /** For DOCKER_HOST. */
  host: string;
  /** `docker save <refs> | docker load` into this engine. */
  load(refs: string[]): Promise<void>;
  stop(): Promise<void>;
}

/** Stops an engine and removes its bridge, its iptables rule and its directory. */
async function teardown(
  dir: string,
  daemon: { pid: number; exited: () => boolean } | undefined,
  cidr?: string,
) {
  if (daemon && !daemon.exited()) {
    process.kill(daemon.pid, 'SIGTERM');
    await until(async () => (daemon.exited() ? done(true) : notYet('running')), {
      timeoutMs: 20_000,
      intervalMs: 200,
      describe: 'dockerd to exit',
    }).catch(() => (daemon.exited() ? undefined : process.kill(daemon.pid, 'SIGKILL')));
  }
  if (cidr) await run('iptables', ['-D', ...ruleFor(cidr)]).catch(() => {});
  await run('ip', ['link', 'del', bridgeOf(dir)]).catch(() => {});
  await rm(dir, { recursive: true, force: true });
}

/** Engines whose test process died before its teardown (killed runs): removed, so their subnets free up. */
async function reapOrphans(): Promise<void> {
  for (const name of await readdir(tmpdir())) {
    if (!name.startsWith(DIR_PREFIX)) continue;
    const dir = join(tmpdir(), name);
    const owner = Number(await readFile(join(dir, 'owner'), 'utf8').catch(() => '0'));
    if (owner && alive(owner)) continue;
    const pid = Number(await readFile(join(dir, 'docker.pid'), 'utf8').catch(() => '0'));
    // A pid file can outlive its daemon, and the pid be reused: signal only this engine's dockerd.
    const ours = async () =>
      (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).includes(join(dir, 'data'));
    const cidr = await readFile(join(dir, 'cidr'), 'utf8').catch(() => undefined);
    await teardown(dir, pid && (await ours()) ? { pid, exited: () => !alive(pid) } : undefined, cidr);
  }
}

async function freeSlot(): Promise<number> {
  const { stdout } = await run('ip', ['-o', '-4', 'addr']);
  const used = new Set(
    [...stdout.matchAll(/inet 10\.213\.(\d+)\./g)].map((m) => Math.floor(Number(m[1]) / 16)),
  );
  for (let slot = 0; slot < SLOTS; slot++) if (!used.has(slot)) return slot;
  throw new Error('no free 10.213.x.0/20 left for a second dockerd: are 16 of them running?');
}

export async function startSecondDockerd(): Promise<SecondDockerd> {
  const lockDir = defaultLockDir();
  await mkdir(lockDir, { recursive: true });
  let daemon: ChildProcess | undefined;
  // Choosing a subnet and claiming it with the bridge's address is one step for concurrent tests.
  const { dir, net } = await withFileLock(join(lockDir, 'second-dockerd.lock'), async () => {
    await reapOrphans();
    const dir = await mkdtemp(join(tmpdir(), DIR_PREFIX));
    await writeFile(join(dir, 'owner'), String(process.pid));
    const net = engineNet(await freeSlot());
    await writeFile(join(dir, 'cidr'), net.cidr);
    const bridge = bridgeOf(dir);
    try {
      await run('ip', ['link', 'add', bridge, 'type', 'bridge']);
      await run('ip', ['addr', 'add', net.bridgeCidr, 'dev', bridge]);
      await run('ip', ['link', 'set', bridge, 'up']);
    } catch (err) {
      await teardown(dir, undefined);
      throw err;
    }
    return { dir, net };
  });
  const bridge = bridgeOf(dir);
  const host = `unix://${join(dir, 'docker.sock')}`;
  const stop = () =>
    teardown(
      dir,
      daemon?.pid
        ? { pid: daemon.pid, exited: () => daemon!.exitCode !== null || daemon!.signalCode !== null }
        : undefined,
      net.cidr,
    );
  try {
    await run('iptables', ['-I', ...ruleFor(net.cidr)]);
    daemon = spawn(
      'dockerd',
      [
        ...[
          '--data-root',
          join(dir, 'data'),
          '--exec-root',
          join(dir, 'exec'),
          '--pidfile',
          join(dir, 'docker.pid'),
        ],
        ...['-H', host, '--bridge', bridge, '--iptables=false', '--ip-masq=false'],
        ...['--default-address-pool', `base=${net.pool},size=24`],
        ...[
          '--containerd-namespace',
          `kh-d2-${bridge}`,
          '--containerd-plugins-namespace',
          `kh-d2p-${bridge}`,
        ],
      ],
      { stdio: 'ignore' },
    );
    const env = { ...process.env, DOCKER_HOST: host };
    await until(
      () =>
        run('docker', ['info', '--format', '{{.ID}}'], { env }).then(
          () => done(true),
          (err: Error) => notYet(err.message.split('\n')[0] ?? ''),
        ),
      { timeoutMs: 30_000, intervalMs: 250, describe: `the second dockerd at ${host}` },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    host,
    async load(refs) {
      await run('sh', ['-c', `docker save ${refs.join(' ')} | DOCKER_HOST=${host} docker load`], {
        maxBuffer: 1 << 20,
      });
    },
    stop,
  };
}
