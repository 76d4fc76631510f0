import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DockerShim, LabelKeys } from '@kh/dockershim';
import { ensureImages, HostContainerd, type StartedHostContainerd } from '@kh/testkit';
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
// file and the same skips.

/**
 * Specs Docker 20.10 cannot pass through any shim, each with the engine's error as critest reports
 * it on the dockershim, and why. Listed in the README too. Empty: every difference is a shim bug.
 */
const DOCKER_CANNOT: Record<string, { error: RegExp; reason: string }> = {};

const docker = new Dockerode({ socketPath: '/var/run/docker.sock' });
const progress = (line: string) => process.stderr.write(`${line}\n`);

let dir: string;
let shim: DockerShim;
let ctrd: StartedHostContainerd;
let containerd: CritestResult;
let dockershim: CritestResult;

async function shimContainers() {
  return docker.listContainers({
    all: true,
    filters: { label: [`${LabelKeys.shimInstance}=${shim.endpoint}`] },
  });
}

beforeAll(async () => {
  const refs = await ensureImages(['pause', 'busybox', 'httpd'], { progress });
  dir = await mkdtemp(join(tmpdir(), 'kh-critest-'));
  shim = await DockerShim.start({
    socketPath: join(dir, 'dockershim.sock'),
    podInfraContainerImage: refs.pause,
    restrictOomScoreAdj: true,
  });
  ctrd = await new HostContainerd().withImages([refs.busybox, refs.httpd]).withProgress(progress).start();
  // The names containerd gives them; Docker resolves the same names to the same images.
  const [, busybox = '', httpd = ''] = ctrd.images;
  const images = { busybox, httpd };
  containerd = await runCritest({ endpoint: ctrd.endpoint, images, progress });
  dockershim = await runCritest({ endpoint: shim.endpoint, images, progress });
  progress(`\n${formatComparison(compareSides(critestSides([containerd, dockershim])))}\n`);
}, 10 * 60_000);

afterAll(async () => {
  await ctrd?.stop();
  if (shim) {
    await shim.close();
    // critest removes what it creates; a spec that failed half-way may not have.
    for (const c of await shimContainers())
      await docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined);
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('upstream critest v1.26, containerd 1.6 (A) and the dockershim on Docker 20.10 (B), side by side', () => {
  it('containerd, the reference, fails no spec', () => {
    const failed = containerd.specs.filter((s) => s.status === 'failed');
    expect(failed, formatComparison(compareSides(critestSides([containerd])))).toEqual([]);
    expect(containerd.totals.passed).toBeGreaterThan(50);
  });

  it('the dockershim passes every spec containerd passes, except what Docker 20.10 cannot do', () => {
    const comparison = compareSides(critestSides([containerd, dockershim]));
    const unexpected = comparison.rows.filter((r) => r.regression && !DOCKER_CANNOT[r.id]).map((r) => r.id);
    expect(unexpected, formatComparison(comparison)).toEqual([]);
  });

  it('each spec listed as impossible on Docker 20.10 still fails there, with the engine error', () => {
    for (const [id, { error }] of Object.entries(DOCKER_CANNOT)) {
      const spec = dockershim.specs.find((s) => s.id === id);
      expect(spec, id).toMatchObject({ status: 'failed', message: expect.stringMatching(error) });
    }
  });

  it('both ran the same specs, and every entry of the skip list skipped a spec on both', () => {
    const ids = (r: CritestResult) => r.specs.map((s) => `${s.id} ${s.status === 'skipped'}`).sort();
    expect(ids(dockershim)).toEqual(ids(containerd));
    for (const skip of CRITEST_SKIPS) {
      const skipped = containerd.specs.filter((s) => s.status === 'skipped' && s.id.includes(skip.spec));
      expect(skipped.length, skip.spec).toBeGreaterThan(0);
    }
  });

  it('left no containers of this shim behind', async () => {
    expect((await shimContainers()).map((c) => c.Names[0])).toEqual([]);
  });
});
