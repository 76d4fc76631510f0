import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '@kh/cri-api';
import { ContainerType, DockerShim, LabelKeys } from '@kh/dockershim';
import { ensureImages, HostCniNetwork, HostContainerd, type StartedHostContainerd } from '@kh/testkit';
import Dockerode from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CRITEST_SKIPS,
  type CritestResult,
  compareSides,
  critestSides,
  formatComparison,
  runCritest,
} from '../src/index.js';

// Issue 22's acceptance: upstream critest v1.26 passes on the dockershim (host dockerd 20.10) every
// spec it passes on containerd 1.6 (a private containerd on the same host), with the same images
// file and the same skips; and issue 33's: in both of the shim's networking modes, `docker` (pods
// on Docker's bridge) and `cni` (the default: Debian's CNI plugins on a private bridge, as
// containerd's).

/**
 * Specs Docker 20.10 cannot pass through any shim, each with the engine's error as critest reports
 * it on the dockershim, and why. Listed in the README too. Empty: every difference is a shim bug.
 */
const DOCKER_CANNOT: Record<string, { error: RegExp; reason: string }> = {};

const docker = new Dockerode({ socketPath: '/var/run/docker.sock' });
const progress = (line: string) => process.stderr.write(`${line}\n`);

let dir: string;
let net: HostCniNetwork;
let ctrd: StartedHostContainerd;
let containerd: CritestResult;
/** The shim and its critest result, per networking mode. */
const shims: Record<'docker' | 'cni', { shim?: DockerShim; result?: CritestResult }> = {
  docker: {},
  cni: {},
};

async function shimContainers(shim: DockerShim) {
  return docker.listContainers({
    all: true,
    filters: { label: [`${LabelKeys.shimInstance}=${shim.endpoint}`] },
  });
}

beforeAll(async () => {
  const refs = await ensureImages(['pause', 'busybox', 'httpd'], { progress });
  dir = await mkdtemp(join(tmpdir(), 'kh-critest-'));
  net = await HostCniNetwork.create();
  const common = { podInfraContainerImage: refs.pause, restrictOomScoreAdj: true };
  shims.docker.shim = await DockerShim.start({
    ...common,
    socketPath: join(dir, 'dockershim.sock'),
    networkPlugin: 'docker',
  });
  shims.cni.shim = await DockerShim.start({
    ...common,
    socketPath: join(dir, 'dockershim-cni.sock'),
    networkPlugin: 'cni',
    cniBinDirs: [net.binDir],
    cniConfDir: net.confDir,
    cniCacheDir: net.cacheDir,
  });
  ctrd = await new HostContainerd().withImages([refs.busybox, refs.httpd]).withProgress(progress).start();
  // The names containerd gives them; Docker resolves the same names to the same images.
  const [, busybox = '', httpd = ''] = ctrd.images;
  const images = { busybox, httpd };
  containerd = await runCritest({ endpoint: ctrd.endpoint, images, progress });
  for (const mode of ['docker', 'cni'] as const) {
    const result = await runCritest({ endpoint: shims[mode].shim!.endpoint, images, progress });
    shims[mode].result = result;
    progress(`\n${mode} mode:\n${formatComparison(compareSides(critestSides([containerd, result])))}\n`);
  }
}, 15 * 60_000);

afterAll(async () => {
  await ctrd?.stop();
  for (const { shim } of Object.values(shims)) {
    if (!shim) continue;
    // critest removes what it creates; a spec that failed half-way may not have. Through the shim
    // first, so that CNI releases addresses and rules.
    const left = await shimContainers(shim);
    const client = await CriClient.connect(shim.endpoint);
    for (const c of left.filter((x) => x.Labels[LabelKeys.containerType] === ContainerType.sandbox))
      await client.removePodSandbox({ podSandboxId: c.Id }).catch(() => undefined);
    client.close();
    await shim.close();
    for (const c of await shimContainers(shim))
      await docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined);
  }
  await net?.remove();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('upstream critest v1.26, containerd 1.6 (A) and the dockershim on Docker 20.10 (B), side by side', () => {
  it('containerd, the reference, fails no spec', () => {
    const failed = containerd.specs.filter((s) => s.status === 'failed');
    expect(failed, formatComparison(compareSides(critestSides([containerd])))).toEqual([]);
    expect(containerd.totals.passed).toBeGreaterThan(50);
  });

  describe.each(['docker', 'cni'] as const)('the dockershim in %s mode', (mode) => {
    const result = () => shims[mode].result!;

    it('passes every spec containerd passes, except what Docker 20.10 cannot do', () => {
      const comparison = compareSides(critestSides([containerd, result()]));
      const unexpected = comparison.rows.filter((r) => r.regression && !DOCKER_CANNOT[r.id]).map((r) => r.id);
      expect(unexpected, formatComparison(comparison)).toEqual([]);
    });

    it('fails each spec listed as impossible on Docker 20.10, with the engine error', () => {
      for (const [id, { error }] of Object.entries(DOCKER_CANNOT)) {
        const spec = result().specs.find((s) => s.id === id);
        expect(spec, id).toMatchObject({ status: 'failed', message: expect.stringMatching(error) });
      }
    });

    it('ran the same specs as containerd, and every entry of the skip list skipped a spec on both', () => {
      const ids = (r: CritestResult) => r.specs.map((s) => `${s.id} ${s.status === 'skipped'}`).sort();
      expect(ids(result())).toEqual(ids(containerd));
      for (const skip of CRITEST_SKIPS) {
        const skipped = containerd.specs.filter((s) => s.status === 'skipped' && s.id.includes(skip.spec));
        expect(skipped.length, skip.spec).toBeGreaterThan(0);
      }
    });

    it('left no containers of this shim behind', async () => {
      expect((await shimContainers(shims[mode].shim!)).map((c) => c.Names[0])).toEqual([]);
    });
  });

  it('left no address leased on the cni mode network', async () => {
    expect(await net.leasedIps()).toEqual([]);
  });
});
