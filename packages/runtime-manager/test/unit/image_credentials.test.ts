import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import type { V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SyncStepError } from '../../src/container/sync_result.js';
import { ImageManager, type ImageService } from '../../src/images/image_manager.js';
import type { RegistryAuth } from '../../src/images/pull_secrets.js';
import {
  type CredentialVerificationPolicy,
  newVerificationPolicy,
} from '../../src/images/pullmanager/policy.js';
import { PullManager } from '../../src/images/pullmanager/pull_manager.js';
import { PullRecordsStore } from '../../src/images/pullmanager/records.js';

// The image manager's decision for an image already on the node, KubeletEnsureSecretPulledImages on.
const IMAGE = 'private:5000/app:1';
const REF = 'sha256:app';

/** A registry that serves IMAGE only to bob, over a node that may already hold it. */
class PrivateRegistryNode implements ImageService {
  present = false;
  pulls: (string | undefined)[] = [];
  async getImageRef(): Promise<string | undefined> {
    return this.present ? REF : undefined;
  }
  async pullImage(_image: string, auth: RegistryAuth | undefined): Promise<string> {
    this.pulls.push(auth?.username);
    if (auth?.username !== 'bob' || auth.password !== 'pw') throw new Error('401 Unauthorized');
    this.present = true;
    return REF;
  }
}

const secret = (name: string, auths: Record<string, { auth: string }>, uid = name): V1Secret => ({
  metadata: { name, namespace: 'ns', uid },
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': Buffer.from(JSON.stringify({ auths })).toString('base64') },
});
const bob = { 'private:5000': { auth: Buffer.from('bob:pw').toString('base64') } };
const testSecret = secret('test', bob);
const sameCreds = secret('copy', bob);
const otherRegistry = secret('invalid', { 'somerepo.com': { auth: Buffer.from('x:y').toString('base64') } });

let dir: string;
let node: PrivateRegistryNode;
let events: { reason: string; message: string }[];
let podN = 0;

function imageManager(policy?: CredentialVerificationPolicy) {
  const clock = new FakeClock();
  return new ImageManager(node, {
    clock,
    recorder: { event: (_o, _t, reason, message) => events.push({ reason, message }) },
    ...(policy
      ? {
          pullManager: new PullManager({
            store: new PullRecordsStore(dir),
            policy: newVerificationPolicy(policy),
            clock,
            listImages: async () => [],
          }),
        }
      : {}),
  });
}

const pod = (): V1Pod => ({ metadata: { name: `p${++podN}`, namespace: 'ns', uid: `uid-${podN}` } });
const ctr = (imagePullPolicy: V1Container['imagePullPolicy']): V1Container => ({
  name: 'c',
  image: IMAGE,
  imagePullPolicy,
});

async function reasonOf(p: Promise<string>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return (err as SyncStepError).reason;
  }
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'image-creds-'));
  node = new PrivateRegistryNode();
  events = [];
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ensureImageExists with KubeletEnsureSecretPulledImages', () => {
  it('a pod with the secret that pulled the image, or its credentials in another secret, uses it without a pull', async () => {
    const m = imageManager('NeverVerifyPreloadedImages');
    expect(await m.ensureImageExists(pod(), ctr('IfNotPresent'), [testSecret])).toBe(REF);
    expect(node.pulls).toEqual(['bob']);
    for (const [policy, secrets] of [
      ['IfNotPresent', [testSecret]],
      ['Never', [testSecret]],
      ['IfNotPresent', [sameCreds]],
      ['Never', [sameCreds]],
    ] as const) {
      expect(await m.ensureImageExists(pod(), ctr(policy), [...secrets])).toBe(REF);
    }
    expect(node.pulls).toEqual(['bob']);
    expect(events.at(-1)).toEqual({
      reason: 'Pulled',
      message: `Container image "${IMAGE}" already present on machine and can be accessed by the pod`,
    });
  });

  it('IfNotPresent without matching credentials pulls again, and fails with ErrImagePull', async () => {
    const m = imageManager('NeverVerifyPreloadedImages');
    await m.ensureImageExists(pod(), ctr('IfNotPresent'), [testSecret]);
    expect(await reasonOf(m.ensureImageExists(pod(), ctr('IfNotPresent'), []))).toBe('ErrImagePull');
    expect(await reasonOf(m.ensureImageExists(pod(), ctr('IfNotPresent'), [otherRegistry]))).toBe(
      'ErrImagePull',
    );
    expect(node.pulls).toEqual(['bob', undefined, undefined]);
  });

  it('Never without matching credentials fails as if the image were absent', async () => {
    const m = imageManager('NeverVerifyPreloadedImages');
    await m.ensureImageExists(pod(), ctr('IfNotPresent'), [testSecret]);
    events = [];
    const err = await m.ensureImageExists(pod(), ctr('Never'), []).catch((e: SyncStepError) => e);
    expect(err).toMatchObject({
      reason: 'ErrImageNeverPull',
      message: `Container image "${IMAGE}" is not present with pull policy of Never`,
    });
    expect(events).toEqual([{ reason: 'ErrImageNeverPull', message: (err as SyncStepError).message }]);
    expect(node.pulls).toEqual(['bob']);
  });

  it('an image on the node that the agent did not pull is preloaded: anyone may use it', async () => {
    node.present = true;
    const m = imageManager('NeverVerifyPreloadedImages');
    expect(await m.ensureImageExists(pod(), ctr('Never'), [])).toBe(REF);
    expect(await reasonOf(imageManager('AlwaysVerify').ensureImageExists(pod(), ctr('Never'), []))).toBe(
      'ErrImageNeverPull',
    );
  });

  it('NeverVerify, and the gate off, keep today’s behaviour', async () => {
    const m = imageManager('NeverVerify');
    await m.ensureImageExists(pod(), ctr('IfNotPresent'), [testSecret]);
    expect(await m.ensureImageExists(pod(), ctr('Never'), [])).toBe(REF);
    const off = imageManager();
    expect(await off.ensureImageExists(pod(), ctr('IfNotPresent'), [])).toBe(REF);
    expect(events.at(-1)?.message).toBe(`Container image "${IMAGE}" already present on machine`);
    expect(node.pulls).toEqual(['bob']);
  });
});
