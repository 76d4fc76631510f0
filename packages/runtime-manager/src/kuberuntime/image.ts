// The manager's image side (the kubelet's kuberuntime_image.go): the CRI ImageService calls
// (PullImage, ImageStatus, ListImages, RemoveImage, ImageFsInfo), the pull policy manager that
// container starts go through, and what image GC needs to know (images in use, filesystem use).
// Image calls go to the image service's own endpoint when it has one (--image-service-endpoint);
// which images containers use is a runtime question, asked of the runtime service.
import { statfs } from 'node:fs/promises';
import type { CriClient, PodSandboxConfig } from '@kh/cri-api';
import type { V1Secret } from '@kubernetes/client-node';
import type { Clock, EventRecorder, Image, ImageGCPolicy, ImageStats } from '../container/runtime.js';
import { ImageGCManager } from '../images/image_gc.js';
import { ImageManager, type ImageManagerOptions } from '../images/image_manager.js';
import { applyDefaultImageTag } from '../images/image_ref.js';
import { type CredentialVerificationPolicy, newVerificationPolicy } from '../images/pullmanager/policy.js';
import { PullManager } from '../images/pullmanager/pull_manager.js';
import { PullRecordsStore } from '../images/pullmanager/records.js';
import { type ImageUser, imageUserOf } from './security_context.js';

/** KubeletEnsureSecretPulledImages on: where pull records live and how present images are verified. */
export interface EnsureSecretPulledImagesOptions {
  /** <root>/image_manager. */
  recordsDir: string;
  policy: CredentialVerificationPolicy;
  /** preloadedImagesVerificationAllowlist, for NeverVerifyAllowlistedImages. */
  allowlist?: string[];
  onError?: (message: string, err: unknown) => void;
}

/** Pull policy knobs (serializeImagePulls, maxParallelImagePulls, registryPullQPS, registryBurst). */
export type ImagePullOptions = Omit<ImageManagerOptions, 'clock' | 'recorder' | 'pullManager'> & {
  ensureSecretPulledImages?: EnsureSecretPulledImagesOptions;
};

async function statfsCapacity(mountpoint: string): Promise<number> {
  const s = await statfs(mountpoint);
  return s.blocks * s.bsize;
}

export class RuntimeImages {
  /** What container starts pull through: pull policies, backoff, secrets, events. */
  readonly manager: ImageManager<PodSandboxConfig>;
  readonly #imageCri: CriClient;
  readonly #runtimeCri: CriClient;
  readonly #imageFsCapacity: (mountpoint: string) => Promise<number>;

  constructor(opts: {
    imageCri: CriClient;
    runtimeCri: CriClient;
    clock: Clock;
    recorder: EventRecorder | undefined;
    pulls: ImagePullOptions | undefined;
    /** Capacity of the image filesystem; by default statfs of the mountpoint the runtime reports. */
    imageFsCapacity: ((mountpoint: string) => Promise<number>) | undefined;
  }) {
    const imageCri = opts.imageCri;
    this.#imageCri = imageCri;
    this.#runtimeCri = opts.runtimeCri;
    this.#imageFsCapacity = opts.imageFsCapacity ?? statfsCapacity;
    const { ensureSecretPulledImages: ensure, ...pulls } = opts.pulls ?? {};
    const pullManager =
      ensure &&
      new PullManager({
        store: new PullRecordsStore(ensure.recordsDir),
        policy: newVerificationPolicy(ensure.policy, ensure.allowlist),
        clock: opts.clock,
        listImages: () => this.listImages(),
        ...(ensure.onError ? { onError: ensure.onError } : {}),
      });
    this.manager = new ImageManager<PodSandboxConfig>(
      {
        getImageRef: (image) => this.getImageRef(image),
        pullImage: async (image, auth, sandboxConfig) =>
          (await imageCri.pullImage({ image: { image }, auth, sandboxConfig })).imageRef,
      },
      { ...pulls, clock: opts.clock, recorder: opts.recorder, ...(pullManager ? { pullManager } : {}) },
    );
  }

  /** The image GC manager over these images; `sandboxImage` is never removed. */
  newImageGC(
    policy: ImageGCPolicy | undefined,
    opts: { clock: Clock; sandboxImage?: string },
  ): ImageGCManager {
    return new ImageGCManager(
      {
        listImages: () => this.listImages(),
        imagesInUse: () => this.#imagesInUse(),
        imageFsUsage: () => this.#imageFsUsage(),
        removeImage: (id) => this.removeImage(id),
      },
      policy,
      opts,
    );
  }

  /** Pulls regardless of policy (the image service's PullImage), trying matching pull secrets. */
  async pullImage(image: string, pullSecrets: V1Secret[]): Promise<string> {
    return (await this.manager.pull(applyDefaultImageTag(image), pullSecrets)).ref;
  }

  async getImageRef(image: string): Promise<string | undefined> {
    return (await this.#imageCri.imageStatus({ image: { image } })).image?.id || undefined;
  }

  /** The user the image runs as, as ImageStatus reports it (the kubelet's getImageUser). */
  async imageUser(image: string): Promise<ImageUser> {
    return imageUserOf((await this.#imageCri.imageStatus({ image: { image } })).image);
  }

  async listImages(): Promise<Image[]> {
    return (await this.#imageCri.listImages({})).images.map((i) => ({
      id: i.id,
      repoTags: i.repoTags,
      repoDigests: i.repoDigests,
      size: Number(i.size),
      pinned: i.pinned,
    }));
  }

  async removeImage(image: string): Promise<void> {
    await this.#imageCri.removeImage({ image: { image } });
  }

  async imageStats(): Promise<ImageStats> {
    return { totalStorageBytes: (await this.listImages()).reduce((n, i) => n + i.size, 0) };
  }

  async #imagesInUse(): Promise<Set<string>> {
    const used = new Set<string>();
    for (const c of (await this.#runtimeCri.listContainers({})).containers) {
      for (const v of [c.imageRef, c.imageId, c.image?.image, c.image?.userSpecifiedImage])
        if (v) used.add(v);
    }
    return used;
  }

  /** Image filesystem usage from CRI ImageFsInfo; capacity from statfs of the reported mountpoint. */
  async #imageFsUsage(): Promise<{ usedBytes: number; capacityBytes: number }> {
    const fs = (await this.#imageCri.imageFsInfo({})).imageFilesystems[0];
    if (!fs) throw new Error('runtime reported no image filesystem');
    const usedBytes = Number(fs.usedBytes?.value ?? 0n);
    return { usedBytes, capacityBytes: await this.#imageFsCapacity(fs.fsId?.mountpoint ?? '') };
  }
}
