import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { normalizeImageRef } from '@kh/apimachinery';
import { containerdConfig } from './containers/containerd-runtime.js';
import { type CriVersion, criVersion } from './containers/cri-probe.js';
import { runId } from './containers/labels.js';
import { RuntimeBuilder } from './containers/runtime-builder.js';
import { criTools } from './cri-tools.js';
import {
  claimHostPodNetwork,
  type HostPodNetwork,
  hostPodConflist,
  releaseHostPodNetwork,
} from './host-cni.js';
import { ensureImages } from './images/ensure.js';
import { docker, requireHostImage } from './util/docker.js';
import { orphanedDirs, processAlive, writeOwner } from './util/owned-dir.js';
import { requireTool, run } from './util/process.js';
import { type Progress, silent, timed } from './util/progress.js';
import { done, notYet, UntilTimeoutError, until } from './util/until.js';

/** containerd 1.6 puts every shim's socket here, whatever its --state (runtime/v2/shim). */
const SHIM_SOCKET_DIR = '/run/containerd/s';
const NAMESPACE = 'k8s.io';

/** A HostContainerd's pod network: its own bridge and /24. */
export type HostContainerdNetwork = HostPodNetwork;

/**
 * containerd 1.6 with its CRI plugin as a private process on the host: its own root, state,
 * socket, runc root and CNI network under one temp dir, so that it runs next to the host's dockerd
 * and next to other runs without sharing anything but the kernel. The side-by-side reference for
 * the dockershim: both run on the same host, with the same images.
 */
export class HostContainerd extends RuntimeBuilder {
  constructor() {
    super(30_000);
  }

  async start(): Promise<StartedHostContainerd> {
    const containerdBin = await requireTool('containerd', 'containerd');
    await requireTool('containerd-shim-runc-v2', 'containerd');
    await requireTool('runc', 'runc');
    await requireTool('ip', 'iproute2');
    const ctr = await requireTool('ctr', 'containerd');
    if (!existsSync('/usr/lib/cni/bridge'))
      throw new Error('/usr/lib/cni/bridge is missing (Debian package containernetworking-plugins)');
    const { crictl } = await criTools();
    const pauseImage = this.pauseImage ?? (await ensureImages(['pause'])).pause;

    const dir = await mkdtemp(join(tmpdir(), `${DIR_PREFIX}${runId}-`));
    const started = new StartedHostContainerd(dir, crictl, ctr, normalizeImageRef(pauseImage), this.progress);
    try {
      started.network = await claimHostPodNetwork();
      await writeConfig(dir, started.network, started.pauseImage);
      const { bridge, subnet } = started.network;
      await timed(this.progress, `host containerd ${dir} (bridge ${bridge}, subnet ${subnet}): start`, () =>
        started.launch(containerdBin, this.readyTimeoutMs),
      );
      const refs = [pauseImage, ...this.images];
      await timed(this.progress, `host containerd: import ${refs.length} image(s)`, () =>
        started.importImages(refs),
      );
    } catch (err) {
      await started.stop().catch((cleanupErr: unknown) => {
        this.progress(`host containerd: cleanup after a failed start: ${(cleanupErr as Error).message}`);
      });
      throw err;
    }
    return started;
  }
}

export class StartedHostContainerd {
  network: HostContainerdNetwork = { bridge: '', subnet: '', gateway: '' };
  version?: CriVersion;
  /** Normalised names of the imported images, in the order given (pause first). */
  images: string[] = [];
  /** containerd's pid: spawned by start(), or found again by removeHostContainerdLeftovers. */
  pid?: number;
  private stopped = false;

  constructor(
    /** The temp dir holding config, root, state, runc root, CNI config and IPAM state, and the log. */
    readonly dir: string,
    private readonly crictl: string,
    private readonly ctr: string,
    /** sandbox_image, normalised (docker.io/...). */
    readonly pauseImage: string,
    private readonly progress: Progress,
  ) {}

  get socketPath(): string {
    return join(this.dir, 'containerd.sock');
  }

  /** The CRI endpoint, for CriClient.connect, crictl and critest. */
  get endpoint(): string {
    return `unix://${this.socketPath}`;
  }

  get logPath(): string {
    return join(this.dir, 'containerd.log');
  }

  /** @internal: starts containerd and waits until its CRI answers. */
  async launch(binary: string, readyTimeoutMs: number): Promise<void> {
    // Who owns this dir, for removeHostContainerdLeftovers after a killed test process.
    await writeOwner(this.dir, { network: this.network });
    const log = openSync(this.logPath, 'a');
    try {
      this.pid = spawn(binary, ['--config', join(this.dir, 'config.toml')], {
        stdio: ['ignore', log, log],
      }).pid;
    } finally {
      closeSync(log);
    }
    try {
      this.version = await until(
        async () => {
          if (!this.pid || !(await processAlive(this.pid))) throw new Error('containerd exited');
          return criVersion(this.socketPath, 1_000).then(done, (err: Error) => notYet(err.message));
        },
        { timeoutMs: readyTimeoutMs, intervalMs: 100, describe: "containerd's CRI to answer" },
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}:\n${await this.logTail()}`, { cause: err });
    }
  }

  /** @internal: `docker save` from the host engine straight into `ctr images import -`. */
  async importImages(refs: readonly string[]): Promise<void> {
    for (const ref of refs) {
      await requireHostImage(ref);
    }
    const save = docker() as unknown as {
      getImages(opts: { names: string[] }): Promise<NodeJS.ReadableStream>;
    };
    const importer = spawn(
      this.ctr,
      ['--address', this.socketPath, '-n', NAMESPACE, 'images', 'import', '-'],
      {
        stdio: ['pipe', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    importer.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const done = new Promise<number | null>((resolve, reject) => {
      importer.once('error', reject);
      importer.once('close', resolve);
    });
    await pipeline(await save.getImages({ names: [...new Set(refs)] }), importer.stdin);
    const code = await done;
    if (code !== 0) throw new Error(`ctr images import failed (exit ${code}): ${stderr.trim()}`);
    this.images = refs.map(normalizeImageRef);
  }

  /**
   * Removes every pod through CRI (so CNI releases addresses and iptables rules), stops containerd,
   * kills what is left of its shims and containers, unmounts what is left under its dir, removes
   * the bridge and the dir. Safe to call twice; what failed is reported after everything was tried.
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const errors: string[] = [];
    const attempt = async (what: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
      } catch (err) {
        errors.push(`${what}: ${(err as Error).message}`);
      }
    };
    if (this.pid && (await processAlive(this.pid))) {
      await attempt('remove pods through CRI', () =>
        run(this.crictl, [
          '--runtime-endpoint',
          this.endpoint,
          '--image-endpoint',
          this.endpoint,
          '--timeout',
          '60s',
          'rmp',
          '--all',
          '--force',
        ]),
      );
      await attempt('stop containerd', () => this.terminate());
    }
    // Anything CRI could not remove: containers by our runc root, then shims by our socket.
    await attempt('kill leftover containers', () => this.killContainers());
    await attempt('kill leftover shims', () => this.killShims());
    await attempt('unmount', () => this.unmountAll());
    await attempt('remove bridge', () => releaseHostPodNetwork(this.network));
    await attempt('remove dir', () => rm(this.dir, { recursive: true, force: true }));
    this.progress(`host containerd ${this.dir}: stopped`);
    if (errors.length > 0) throw new Error(`HostContainerd.stop: ${errors.join('; ')}`);
  }

  private async terminate(): Promise<void> {
    const pid = this.pid;
    if (!pid) return;
    for (const [signal, waitMs] of [
      ['SIGTERM', 10_000],
      ['SIGKILL', 5_000],
    ] as const) {
      try {
        process.kill(pid, signal);
      } catch {
        return;
      }
      const gone = await until(async () => ((await processAlive(pid)) ? notYet('running') : done(true)), {
        timeoutMs: waitMs,
        intervalMs: 50,
        describe: `containerd (pid ${pid}) to exit on ${signal}`,
      }).catch((err: unknown) => {
        if (err instanceof UntilTimeoutError) return false;
        throw err;
      });
      if (gone) return;
    }
    throw new Error(`containerd (pid ${pid}) survived SIGKILL`);
  }

  private async killContainers(): Promise<void> {
    const root = join(this.dir, 'runc');
    if (!existsSync(root)) return;
    const ids = (await readdir(root)).filter((id) => existsSync(join(root, id, 'state.json')));
    for (const id of ids) {
      await run('runc', ['--root', root, 'kill', '--all', id, 'KILL']).catch(() => undefined);
      await run('runc', ['--root', root, 'delete', '--force', id]);
    }
  }

  private async killShims(): Promise<void> {
    const shims = await shimsOf(this.socketPath);
    for (const { pid } of shims) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    // A killed shim leaves its socket behind: sha256 of "<containerd address>/<namespace>/<id>".
    for (const { id } of shims) {
      const hash = createHash('sha256')
        .update(join(this.socketPath, NAMESPACE, id))
        .digest('hex');
      await rm(join(SHIM_SOCKET_DIR, hash), { force: true });
    }
  }

  private async unmountAll(): Promise<void> {
    const mounts = (await readFile('/proc/self/mountinfo', 'utf8'))
      .split('\n')
      .map((line) => line.split(' ')[4])
      .filter((m): m is string => m !== undefined)
      .map((m) =>
        m.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8))),
      )
      .filter((m) => m.startsWith(`${this.dir}/`))
      .sort((a, b) => b.length - a.length);
    for (const m of mounts) await run('umount', ['--lazy', m]);
  }

  private async logTail(lines = 20): Promise<string> {
    const text = await readFile(this.logPath, 'utf8').catch(() => '');
    return text.trim().split('\n').slice(-lines).join('\n');
  }
}

const DIR_PREFIX = 'kh-containerd-';

/**
 * Stops the HostContainerds whose owning process died without stop() (a killed test run): their
 * containerd, pods, shims, mounts, bridge and dir, as stop() would. Returns how many it removed.
 */
export async function removeHostContainerdLeftovers(options: { progress?: Progress } = {}): Promise<number> {
  const orphans = await orphanedDirs<{ network: HostPodNetwork }>(DIR_PREFIX);
  for (const { dir, owner } of orphans) {
    const { crictl } = await criTools();
    const ctr = await requireTool('ctr', 'containerd');
    const orphan = new StartedHostContainerd(dir, crictl, ctr, '', options.progress ?? silent);
    orphan.network = owner.network;
    orphan.pid = await containerdOf(dir);
    await orphan.stop();
  }
  return orphans.length;
}

/** The containerd started with this dir's config, if it still runs. */
async function containerdOf(dir: string): Promise<number | undefined> {
  const config = join(dir, 'config.toml');
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const args = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (args[0]?.endsWith('containerd') && args[args.indexOf('--config') + 1] === config)
      return Number(entry);
  }
  return undefined;
}

/** The shims serving this containerd: the runc v2 shim names its containerd's address on its command line. */
async function shimsOf(socketPath: string): Promise<Array<{ pid: number; id: string }>> {
  const found: Array<{ pid: number; id: string }> = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const args = (await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '')).split('\0');
    if (!args[0]?.endsWith('containerd-shim-runc-v2')) continue;
    const arg = (name: string) => args[args.indexOf(name) + 1];
    if (arg('-address') === socketPath && arg('-namespace') === NAMESPACE)
      found.push({ pid: Number(entry), id: arg('-id') ?? '' });
  }
  return found;
}

async function writeConfig(dir: string, network: HostContainerdNetwork, pauseImage: string): Promise<void> {
  const cniDir = join(dir, 'cni');
  await mkdir(cniDir, { recursive: true });
  const toml = containerdConfig({ pauseImage, socketPath: join(dir, 'containerd.sock'), hostDir: dir });
  await writeFile(join(dir, 'config.toml'), toml);
  await writeFile(
    join(cniDir, '10-kh-host.conflist'),
    hostPodConflist(network, { name: `kh-host-${network.bridge}`, ipamDir: join(dir, 'ipam') }),
  );
}
