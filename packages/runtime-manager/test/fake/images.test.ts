import type { PullImageRequest } from '@kh/cri-api';
import { NotFoundError } from '@kh/cri-api';
import type { V1Secret } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { PodSyncResult } from '../../src/container/runtime.js';
import { ctr, Harness, makePod } from './harness.js';

let h: Harness;
afterEach(async () => {
  await h.stop();
});

const appStep = (r: PodSyncResult) => r.steps.find((s) => s.target === 'app')!;
const pulls = () => h.requests<PullImageRequest>('PullImage').map((p) => p.image!.image);

describe('image pull policies and reasons', () => {
  it('pulls :latest (Always by default) on every start, but IfNotPresent images only when missing', async () => {
    h = await Harness.start();
    h.fake.script.registryImage('registry:5000/app:latest', 100);
    h.fake.script.registryImage('registry:5000/app:v1', 100);
    h.fake.script.containerExit('app', { afterMs: 0, exitCode: 0 });
    const latest = makePod('latest', [ctr('app', { image: 'registry:5000/app' })]);
    await h.sync(latest);
    await h.sync(latest);
    expect(pulls()).toEqual(['registry:5000/app:latest', 'registry:5000/app:latest']);

    const tagged = makePod('tagged', [ctr('app', { image: 'registry:5000/app:v1' })]);
    await h.sync(tagged);
    h.advance(10_000);
    await h.sync(tagged);
    expect(pulls().filter((p) => p.endsWith(':v1'))).toEqual(['registry:5000/app:v1']);
    expect(h.events.filter((e) => e.reason === 'Pulled').map((e) => e.message)).toContain(
      'Container image "registry:5000/app:v1" already present on machine',
    );
  });

  it('ErrImageNeverPull when a Never image is missing; uses it when present', async () => {
    h = await Harness.start();
    const pod = makePod('never', [ctr('app', { image: 'local/app:1', imagePullPolicy: 'Never' })]);
    const r = await h.sync(pod);
    expect(appStep(r)).toMatchObject({
      reason: 'ErrImageNeverPull',
      message: 'Container image "local/app:1" is not present with pull policy of Never',
    });
    expect(pulls()).toEqual([]);
    h.fake.addImage('local/app:1', 10);
    expect(appStep(await h.sync(pod)).error).toBeUndefined();
  });

  it('ErrImagePull, then ImagePullBackOff until the backoff passes', async () => {
    h = await Harness.start();
    h.fake.script.pullFailure('registry:5000/missing:1', { error: new NotFoundError('manifest unknown') });
    const pod = makePod('pullfail', [ctr('app', { image: 'registry:5000/missing:1' })]);
    const r1 = appStep(await h.sync(pod));
    expect(r1.reason).toBe('ErrImagePull');
    expect(r1.message).toMatch(/^Failed to pull image "registry:5000\/missing:1": .*manifest unknown/);
    const r2 = appStep(await h.sync(pod));
    expect(r2).toMatchObject({
      reason: 'ImagePullBackOff',
      message: 'Back-off pulling image "registry:5000/missing:1"',
    });
    expect(pulls()).toHaveLength(1);
    h.advance(10_000);
    expect(appStep(await h.sync(pod)).reason).toBe('ErrImagePull');
    expect(pulls()).toHaveLength(2);
    h.advance(10_000); // now 20s of backoff
    expect(appStep(await h.sync(pod)).reason).toBe('ImagePullBackOff');
  });

  it('InvalidImageName for a malformed reference, without calling the runtime', async () => {
    h = await Harness.start();
    const r = appStep(await h.sync(makePod('bad', [ctr('app', { image: 'Bad/Name' })])));
    expect(r.reason).toBe('InvalidImageName');
    expect(r.message).toMatch(/Failed to apply default image tag "Bad\/Name": .*must be lowercase/);
    expect(pulls()).toEqual([]);
  });

  it('sends dockerconfigjson pull secrets as the CRI AuthConfig', async () => {
    h = await Harness.start();
    h.fake.script.registryImage('registry:5000/private:1', 10);
    const secret: V1Secret = {
      metadata: { name: 'regcred', namespace: 'default' },
      type: 'kubernetes.io/dockerconfigjson',
      data: {
        '.dockerconfigjson': Buffer.from(
          JSON.stringify({ auths: { 'registry:5000': { username: 'bob', password: 'hunter2' } } }),
        ).toString('base64'),
      },
    };
    const pod = makePod('private', [ctr('app', { image: 'registry:5000/private:1' })]);
    await h.sync(pod, [secret]);
    const [req] = h.requests<PullImageRequest>('PullImage');
    expect(req!.auth).toMatchObject({
      username: 'bob',
      password: 'hunter2',
      serverAddress: 'https://registry:5000',
    });
    expect(req!.sandboxConfig?.metadata?.name).toBe('private');
  });

  it('refuses pulls over registryPullQPS/registryBurst with ErrImagePull "pull QPS exceeded"', async () => {
    h = await Harness.start({ images: { registryPullQPS: 1, registryBurst: 1 } });
    h.fake.script.registryImage('registry:5000/a:1', 10);
    h.fake.script.registryImage('registry:5000/b:1', 10);
    const pod = makePod('qps', [
      ctr('app', { image: 'registry:5000/a:1' }),
      ctr('app2', { image: 'registry:5000/b:1' }),
    ]);
    const r = await h.sync(pod);
    expect(r.steps.find((s) => s.target === 'app2')).toMatchObject({ reason: 'ErrImagePull' });
    expect(r.steps.find((s) => s.target === 'app2')!.message).toMatch(/pull QPS exceeded/);
    expect(pulls()).toEqual(['registry:5000/a:1']);
  });

  it('pullImage pulls at once with the default tag, and the image list/ref/remove calls see it', async () => {
    h = await Harness.start();
    h.fake.script.registryImage('registry:5000/tool:latest', 1234);
    const ref = await h.manager.pullImage('registry:5000/tool', []);
    expect(pulls()).toEqual(['registry:5000/tool:latest']);
    expect(await h.manager.getImageRef('registry:5000/tool:latest')).toBe(ref);
    expect((await h.manager.listImages()).find((i) => i.id === ref)?.size).toBe(1234);
    expect((await h.manager.imageStats()).totalStorageBytes).toBeGreaterThanOrEqual(1234);
    await h.manager.removeImage(ref);
    expect(await h.manager.getImageRef('registry:5000/tool:latest')).toBeUndefined();
    await expect(h.manager.pullImage('registry:5000/absent:1', [])).rejects.toThrow(/not found|NOT_FOUND/i);
  });
});
