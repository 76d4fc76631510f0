import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  allowlistPatternProblem,
  type CredentialVerificationPolicy,
  newVerificationPolicy,
} from '../../src/images/pullmanager/policy.js';
import { type ListImages, PullManager } from '../../src/images/pullmanager/pull_manager.js';
import {
  type ImagePulledRecord,
  type ImagePullSecret,
  PULLED_DIR,
  PULLING_DIR,
  PullRecordsStore,
} from '../../src/images/pullmanager/records.js';

describe('imagePullCredentialsVerificationPolicy', () => {
  it('NeverVerify never, AlwaysVerify always, NeverVerifyPreloadedImages only what the kubelet pulled', () => {
    expect(newVerificationPolicy('NeverVerify')('r:5000/a:1', true)).toBe(false);
    expect(newVerificationPolicy('AlwaysVerify')('r:5000/a:1', false)).toBe(true);
    const preloaded = newVerificationPolicy('NeverVerifyPreloadedImages');
    expect(preloaded('r:5000/a:1', false)).toBe(false);
    expect(preloaded('r:5000/a:1', true)).toBe(true);
  });

  it('NeverVerifyAllowlistedImages exempts exact repositories and "/*" prefixes, whatever the tag', () => {
    const p = newVerificationPolicy('NeverVerifyAllowlistedImages', ['r:5000/exact', 'r:5000/team/*']);
    expect(p('r:5000/exact:1', true)).toBe(false);
    expect(p('r:5000/exact/sub:1', true)).toBe(true);
    expect(p('r:5000/team/app@sha256:' + 'a'.repeat(64), true)).toBe(false);
    expect(p('docker.io/library/busybox:1', false)).toBe(true);
    expect(() => newVerificationPolicy('NeverVerifyAllowlistedImages', ['r:5000/a:1'])).toThrow(/tag/);
  });

  it('rejects allowlist patterns the kubelet rejects', () => {
    expect(allowlistPatternProblem('r:5000/app')).toBeUndefined();
    expect(allowlistPatternProblem('r:5000/*')).toBeUndefined();
    expect(allowlistPatternProblem(' r:5000/app')).toMatch(/spaces/);
    expect(allowlistPatternProblem('r:5000/app:1')).toMatch(/neither tag nor digest/);
    expect(allowlistPatternProblem('r:5000/a*')).toMatch(/only patterns ending with/);
    expect(allowlistPatternProblem('/*')).toMatch(/registry hostname/);
    expect(allowlistPatternProblem('busybox')).toMatch(/fully qualified/);
    expect(allowlistPatternProblem('')).toMatch(/too short/);
  });
});

const IMAGE = 'r:5000/private:1';
const REF = 'sha256:aaaa';
const secretA: ImagePullSecret = { uid: 'u1', namespace: 'ns', name: 'a', credentialHash: 'h1' };

let dir: string;
let errors: string[];
const clock = new FakeClock();
const noImages: ListImages = async () => [];

function manager(policy: CredentialVerificationPolicy = 'NeverVerifyPreloadedImages', listImages = noImages) {
  return new PullManager({
    store: new PullRecordsStore(dir),
    policy: newVerificationPolicy(policy),
    clock,
    listImages,
    onError: (m) => errors.push(m),
  });
}

async function pulledRecords(): Promise<ImagePulledRecord[]> {
  const files = await readdir(join(dir, PULLED_DIR));
  return Promise.all(files.map(async (f) => JSON.parse(await readFile(join(dir, PULLED_DIR, f), 'utf8'))));
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pullmanager-'));
  errors = [];
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('PullManager', () => {
  it('an image with no record and no intent is preloaded: verified only under AlwaysVerify', async () => {
    expect(await manager().mustAttemptImagePull(IMAGE, REF, [])).toBe(false);
    expect(await manager('AlwaysVerify').mustAttemptImagePull(IMAGE, REF, [])).toBe(true);
  });

  it('accepts the secret that pulled the image and refuses a pod without it', async () => {
    const m = manager();
    await m.recordPullIntent(IMAGE);
    await m.recordImagePulled(IMAGE, REF, { kubernetesSecrets: [secretA] });
    expect(await readdir(join(dir, PULLING_DIR))).toEqual([]);
    expect(await m.mustAttemptImagePull(IMAGE, REF, [secretA])).toBe(false);
    expect(await m.mustAttemptImagePull(IMAGE, REF, [])).toBe(true);
    const stranger = { uid: 'u9', namespace: 'other', name: 'x', credentialHash: 'h9' };
    expect(await m.mustAttemptImagePull(IMAGE, REF, [stranger])).toBe(true);
    // Another tag of the same repository shares the record; another repository does not.
    expect(await m.mustAttemptImagePull('r:5000/private:2', REF, [secretA])).toBe(false);
    expect(await m.mustAttemptImagePull('r:5000/other:1', REF, [secretA])).toBe(true);
  });

  it('accepts the same credentials in another secret, and records that secret', async () => {
    const m = manager();
    await m.recordImagePulled(IMAGE, REF, { kubernetesSecrets: [secretA] });
    const copy = { ...secretA, uid: 'u2', name: 'copy' };
    expect(await m.mustAttemptImagePull(IMAGE, REF, [copy])).toBe(false);
    const [record] = await pulledRecords();
    expect(record!.credentialMapping['r:5000/private']!.kubernetesSecrets).toEqual([secretA, copy]);
  });

  it('accepts the same secret with rotated credentials, and records the new hash', async () => {
    const m = manager();
    await m.recordImagePulled(IMAGE, REF, { kubernetesSecrets: [secretA] });
    const rotated = { ...secretA, credentialHash: 'h2' };
    expect(await m.mustAttemptImagePull(IMAGE, REF, [rotated])).toBe(false);
    const [record] = await pulledRecords();
    expect(record!.credentialMapping['r:5000/private']!.kubernetesSecrets).toEqual([rotated]);
  });

  it('an anonymous pull makes the image every pod’s', async () => {
    const m = manager('AlwaysVerify');
    await m.recordImagePulled(IMAGE, REF, { nodePodsAccessible: true });
    expect(await m.mustAttemptImagePull(IMAGE, REF, [])).toBe(false);
  });

  it('a pull in flight makes the image kubelet-pulled; a failed pull removes its intent', async () => {
    const m = manager();
    await m.recordPullIntent(IMAGE);
    expect(await m.mustAttemptImagePull(IMAGE, REF, [])).toBe(true);
    await m.recordImagePullFailed(IMAGE);
    expect(await readdir(join(dir, PULLING_DIR))).toEqual([]);
    expect(await m.mustAttemptImagePull(IMAGE, REF, [])).toBe(false);
  });

  it('records survive a restart', async () => {
    await manager().recordImagePulled(IMAGE, REF, { kubernetesSecrets: [secretA] });
    const restarted = manager();
    expect(await restarted.mustAttemptImagePull(IMAGE, REF, [secretA])).toBe(false);
    expect(await restarted.mustAttemptImagePull(IMAGE, REF, [])).toBe(true);
  });

  it('an intent a restart left becomes a record without credentials when the image is present', async () => {
    await manager().recordPullIntent(IMAGE);
    const restarted = manager('NeverVerifyPreloadedImages', async () => [
      { id: REF, repoTags: [IMAGE], repoDigests: [] },
    ]);
    // Pulled by the kubelet with unknown credentials: every pod must verify.
    expect(await restarted.mustAttemptImagePull(IMAGE, REF, [secretA])).toBe(true);
    expect(await readdir(join(dir, PULLING_DIR))).toEqual([]);
    expect((await pulledRecords())[0]).toMatchObject({ imageRef: REF, credentialMapping: {} });
  });

  it('fails safe on an unreadable record: the pod must pull', async () => {
    const m = manager('NeverVerify');
    await m.recordImagePulled(IMAGE, REF, { nodePodsAccessible: true });
    const [file] = await readdir(join(dir, PULLED_DIR));
    await writeFile(join(dir, PULLED_DIR, file!), '{not json');
    expect(await m.mustAttemptImagePull(IMAGE, REF, [])).toBe(true);
    expect(errors).toEqual(['unable to access the image pull records']);
  });
});
