// A second Docker engine on this machine, on its own unix socket, standing in for a remote engine
// (DOCKER_HOST=unix:///…/docker.sock). Everything it needs is its own: data, exec root, pid file,
// containerd namespace, a default bridge the test creates (not `--bridge=none`: dockerd then
// deletes the host's docker0, which the first engine owns), and address pools no other engine uses.
// It leaves iptables alone (two daemons would rewrite each other's chains); one ACCEPT rule in
// DOCKER-USER lets its containers reach each other through the host's FORWARD DROP policy.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { done, notYet, until } from '@kh/testkit';

const run = promisify(execFile);

/** Private to this engine: its bridge and the networks it creates (the first engine uses 172.x). */
const POOL = '10.213.0.0/17';
const BRIDGE_CIDR = '10.213.255.1/24';
const ENGINE_CIDR = '10.213.0.0/16';
const RULE = [
  'DOCKER-USER',
  '-s',
  ENGINE_CIDR,
  '-d',
  ENGINE_CIDR,
  '-m',
  'comment',
  '--comment',
  'kh-test-second-dockerd',
  '-j',
  'ACCEPT',
];

export interface SecondDockerd {
  /** For DOCKER_HOST. */
  host: string;
  /** `docker save <refs> | docker load` into this engine. */
  load(refs: string[]): Promise<void>;
  stop(): Promise<void>;
}

export async function startSecondDockerd(): Promise<SecondDockerd> {
  const dir = await mkdtemp(join(tmpdir(), 'kh-d2-'));
  const bridge = `khd2${dir.slice(-6).replace(/[^a-zA-Z0-9]/g, '')}`;
  const host = `unix://${join(dir, 'docker.sock')}`;
  let daemon: ChildProcess | undefined;
  let ruleAdded = false;
  const stop = async () => {
    if (daemon && daemon.exitCode === null) {
      const exited = new Promise((r) => daemon!.once('exit', r));
      daemon.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (daemon.exitCode === null) daemon.kill('SIGKILL');
    }
    if (ruleAdded) await run('iptables', ['-D', ...RULE]).catch(() => {});
    await run('ip', ['link', 'del', bridge]).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await run('ip', ['link', 'add', bridge, 'type', 'bridge']);
    await run('ip', ['addr', 'add', BRIDGE_CIDR, 'dev', bridge]);
    await run('ip', ['link', 'set', bridge, 'up']);
    await run('iptables', ['-I', ...RULE]);
    ruleAdded = true;
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
        ...['--default-address-pool', `base=${POOL},size=24`],
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
