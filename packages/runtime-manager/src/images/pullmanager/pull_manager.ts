// The kubelet's image pull manager (KEP-2535, KubeletEnsureSecretPulledImages): remembers which
// credentials pulled each image, so that a pod asking for an image already on the node uses it
// only when it presents credentials that pulled it before (or the policy exempts the image).
// Records live on disk and survive a restart; an intent left by a pull that a restart cut short
// becomes a record without credentials when the image turns out to be present.
import type { Clock } from '../../container/runtime.js';
import { repositoryOf, type VerificationPolicy } from './policy.js';
import type {
  ImagePullCredentials,
  ImagePulledRecord,
  ImagePullSecret,
  PullRecordsStore,
} from './records.js';
import { RECORDS_API_VERSION } from './records.js';

/** What the image manager asks and tells the pull manager. */
export interface ImagePullManager {
  /** Before a pull: from now on the image counts as pulled by the kubelet. */
  recordPullIntent(image: string): Promise<void>;
  /** After a successful pull with `credentials` (nodePodsAccessible when none were needed). */
  recordImagePulled(image: string, imageRef: string, credentials: ImagePullCredentials): Promise<void>;
  recordImagePullFailed(image: string): Promise<void>;
  /** Whether a pod presenting `podSecrets` must pull `image` (present as `imageRef`) to use it. */
  mustAttemptImagePull(image: string, imageRef: string, podSecrets: ImagePullSecret[]): Promise<boolean>;
}

/** Images the runtime has, by tag and digest, for turning leftover intents into records. */
export type ListImages = () => Promise<{ id: string; repoTags: string[]; repoDigests: string[] }[]>;

export interface PullManagerOptions {
  store: PullRecordsStore;
  policy: VerificationPolicy;
  clock: Clock;
  /** The runtime's images, read once at start to settle intents a restart left behind. */
  listImages: ListImages;
  /** Problems that make the manager fail safe (require a pull) rather than fail the pod. */
  onError?: (message: string, err: unknown) => void;
}

const sameSecret = (a: ImagePullSecret, b: ImagePullSecret) =>
  a.uid === b.uid && a.namespace === b.namespace && a.name === b.name;

export class PullManager implements ImagePullManager {
  readonly #store: PullRecordsStore;
  readonly #policy: VerificationPolicy;
  readonly #clock: Clock;
  readonly #onError: (message: string, err: unknown) => void;
  /** In-flight pulls per image: the intent file goes when the last one ends. */
  readonly #intents = new Map<string, number>();
  /** Record reads and writes run one at a time, so a decision never sees a half-merged record. */
  #queue: Promise<unknown>;

  constructor(opts: PullManagerOptions) {
    this.#store = opts.store;
    this.#policy = opts.policy;
    this.#clock = opts.clock;
    this.#onError = opts.onError ?? (() => {});
    // Every call queues behind this, so no decision is made before leftover intents are settled.
    this.#queue = this.#initialize(opts.listImages).catch((err: unknown) =>
      this.#onError('failed to settle image pull intents left by a previous run', err),
    );
  }

  /** Turns intents of pulls that completed before a restart into records. */
  async #initialize(listImages: ListImages): Promise<void> {
    await this.#store.ensureDirs();
    const intents = new Set((await this.#store.listIntents()).map((i) => i.image));
    if (intents.size === 0) return;
    for (const img of await listImages()) {
      for (const name of [...img.repoTags, ...img.repoDigests]) {
        if (!intents.has(name)) continue;
        // Pulled, but with which credentials is unknown: tracked, and verified on next use.
        await this.#mergePulled(name, img.id, undefined);
        await this.#store.deleteIntent(name);
      }
    }
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => {});
    return run;
  }

  recordPullIntent(image: string): Promise<void> {
    return this.#serial(async () => {
      await this.#store.writeIntent(image);
      this.#intents.set(image, (this.#intents.get(image) ?? 0) + 1);
    });
  }

  recordImagePulled(image: string, imageRef: string, credentials: ImagePullCredentials): Promise<void> {
    return this.#serial(async () => {
      try {
        await this.#mergePulled(image, imageRef, credentials);
      } catch (err) {
        // The intent stays: after a restart the image still counts as pulled by the kubelet.
        this.#onError(`failed to write the pulled record of ${imageRef}`, err);
        return;
      }
      await this.#endIntent(image);
    });
  }

  recordImagePullFailed(image: string): Promise<void> {
    return this.#serial(() => this.#endIntent(image));
  }

  async #endIntent(image: string): Promise<void> {
    const n = this.#intents.get(image) ?? 0;
    if (n > 1) {
      this.#intents.set(image, n - 1);
      return;
    }
    try {
      await this.#store.deleteIntent(image);
      this.#intents.delete(image);
    } catch (err) {
      this.#onError(`failed to remove the pull intent of ${image}`, err);
    }
  }

  /** Adds `credentials` for `image`'s repository to the record of `imageRef`, writing only on change. */
  async #mergePulled(image: string, imageRef: string, credentials: ImagePullCredentials | undefined) {
    const repo = repositoryOf(image);
    const existing = await this.#store.getPulled(imageRef).catch((err: unknown) => {
      this.#onError(`unreadable pulled record of ${imageRef}, replacing it`, err);
      return undefined;
    });
    const record: ImagePulledRecord = existing ?? {
      apiVersion: RECORDS_API_VERSION,
      kind: 'ImagePulledRecord',
      lastUpdatedTime: '',
      imageRef,
      credentialMapping: {},
    };
    const changed = mergeCredentials(record, repo, credentials) || !existing;
    if (!changed) return;
    record.lastUpdatedTime = new Date(this.#clock.now()).toISOString();
    await this.#store.writePulled(record);
  }

  mustAttemptImagePull(image: string, imageRef: string, podSecrets: ImagePullSecret[]): Promise<boolean> {
    if (imageRef === '') return Promise.resolve(true);
    return this.#serial(async () => {
      let record: ImagePulledRecord | undefined;
      let pulledByKubelet: boolean;
      try {
        record = await this.#store.getPulled(imageRef);
        pulledByKubelet =
          record !== undefined ||
          (this.#intents.get(image) ?? 0) > 0 ||
          (await this.#store.intentExists(image));
      } catch (err) {
        this.#onError('unable to access the image pull records', err);
        return true;
      }
      if (!this.#policy(image, pulledByKubelet)) return false;
      const cached = record?.credentialMapping[repositoryOf(image)];
      if (!record || !cached) return true;
      if (cached.nodePodsAccessible) return false;
      for (const pod of podSecrets) {
        for (const known of cached.kubernetesSecrets ?? []) {
          const hashMatch = known.credentialHash !== '' && known.credentialHash === pod.credentialHash;
          const coordinatesMatch = sameSecret(known, pod);
          if (!hashMatch && !coordinatesMatch) continue;
          // Either the same credentials in another secret, or the same secret with new
          // credentials: both may use the image, and the record learns the pairing.
          if (!(hashMatch && coordinatesMatch)) {
            await this.#mergePulled(image, imageRef, { kubernetesSecrets: [pod] }).catch((err: unknown) =>
              this.#onError(`failed to write the pulled record of ${imageRef}`, err),
            );
          }
          return false;
        }
      }
      return true;
    });
  }
}

/** Merges `add` into `record`'s credentials for `repo`; true when something changed. */
function mergeCredentials(
  record: ImagePulledRecord,
  repo: string,
  add: ImagePullCredentials | undefined,
): boolean {
  if (!add || (!add.nodePodsAccessible && !add.kubernetesSecrets?.length)) return false;
  const current = record.credentialMapping[repo];
  if (!current) {
    record.credentialMapping[repo] = structuredClone(add);
    return true;
  }
  if (current.nodePodsAccessible) return false;
  if (add.nodePodsAccessible) {
    record.credentialMapping[repo] = { nodePodsAccessible: true };
    return true;
  }
  let changed = false;
  const secrets = current.kubernetesSecrets ?? [];
  for (const s of add.kubernetesSecrets ?? []) {
    const i = secrets.findIndex((k) => sameSecret(k, s));
    if (i < 0) secrets.push({ ...s });
    else if (secrets[i]!.credentialHash !== s.credentialHash) secrets[i] = { ...s };
    else continue;
    changed = true;
  }
  current.kubernetesSecrets = secrets;
  return changed;
}
