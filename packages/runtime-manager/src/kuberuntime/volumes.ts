// The pod's volumes on the node, under <podsDir>/<uid>/volumes/<plugin dir>/<name> as the
// kubelet lays them out: emptyDir as a plain directory, or a tmpfs sized as the kubelet sizes it
// for medium Memory, given to the pod's fsGroup when set up; configMap, secret, downwardAPI and
// projected volumes as files the atomic writer projects from the API objects, mounted read-only
// and rewritten in place when the objects change (`refresh`). Once nothing of a pod runs, its emptyDir volumes are torn down.
import { access, chmod, lchown, lstat, mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Quantity } from '@kh/apimachinery';
import type {
  V1ConfigMapProjection,
  V1DownwardAPIVolumeFile,
  V1KeyToPath,
  V1Pod,
  V1Volume,
  V1VolumeProjection,
} from '@kubernetes/client-node';
import { SyncStepError } from '../container/sync_result.js';
import { type Payload, writePayload } from './atomic_writer.js';
import { metadataFieldValue, resourceFieldValue } from './env.js';
import { type ObjectKind, type PodObjectSource, readObjectData } from './pod_objects.js';
import { hostMounter, type TmpfsMounter } from './subpath.js';

/** The waiting reason of a container whose volumes cannot be set up yet (the kubelet's). */
export const ContainerCreating = 'ContainerCreating';

/** The kubelet's default file mode for projected files (0644). */
const DefaultMode = 0o644;
/** The token lifetime a serviceAccountToken projection gets when it names none (1h). */
const DefaultTokenExpirationSeconds = 3600;

const PluginDirs = {
  emptyDir: 'kubernetes.io~empty-dir',
  configMap: 'kubernetes.io~configmap',
  secret: 'kubernetes.io~secret',
  downwardAPI: 'kubernetes.io~downward-api',
  projected: 'kubernetes.io~projected',
} as const;

type ApiVolumeType = Exclude<keyof typeof PluginDirs, 'emptyDir'>;
const API_VOLUME_TYPES: ApiVolumeType[] = ['configMap', 'secret', 'downwardAPI', 'projected'];

const apiVolumeType = (vol: V1Volume): ApiVolumeType | undefined => API_VOLUME_TYPES.find((t) => vol[t]);

const volumeError = (vol: V1Volume, message: string) =>
  new SyncStepError(ContainerCreating, `MountVolume.SetUp failed for volume "${vol.name}" : ${message}`);

/** The group bits fsGroup ownership adds: read for a read-only volume, read-write otherwise. */
const RO_GROUP_MASK = 0o440;
const RW_GROUP_MASK = 0o660;
const EXEC_MASK = 0o110;
const SETGID = 0o2000;

/**
 * The kubelet's SetVolumeOwnership for a pod's fsGroup: everything in the volume belongs to the
 * group (symlinks too, themselves), files get its read (and for writable volumes write) bits, and
 * directories are setgid so new files inherit the group. The volume's root comes last, as in the
 * kubelet's walk, so an interrupted change is redone in full. The volumes set up here are the
 * kubelet's emptyDir and API volume plugins, which ignore fsGroupChangePolicy (they pass none):
 * every call changes the whole tree. With hostUsers: false the runtime's ID-mapped mount shows
 * the same group inside the pod's user namespace.
 */
export async function setVolumeOwnership(path: string, fsGroup: number, readonly: boolean): Promise<void> {
  const st = await lstat(path);
  if (st.isDirectory()) {
    for (const name of await readdir(path)) await setVolumeOwnership(join(path, name), fsGroup, readonly);
  }
  await lchown(path, -1, fsGroup);
  // chmod would follow a symlink and change its target's mode, which the volume set on purpose.
  if (st.isSymbolicLink()) return;
  const mask = readonly ? RO_GROUP_MASK : RW_GROUP_MASK;
  await chmod(path, (st.mode & 0o7777) | mask | (st.isDirectory() ? SETGID | EXEC_MASK : 0));
}

export interface VolumeMountSource {
  hostPath: string;
  /** API-projected volumes are always read-only, whatever the mount asks. */
  readonly: boolean;
}

export class PodVolumes {
  /** The last write per volume dir: a refresh and a container start never write one dir at once. */
  private readonly writes = new Map<string, Promise<unknown>>();

  constructor(
    private readonly podsDir: string,
    private readonly objects?: PodObjectSource,
    private readonly tmpfs: TmpfsMounter = hostMounter,
  ) {}

  private dir(pod: V1Pod, plugin: string, name: string): string {
    return join(this.podsDir, pod.metadata?.uid ?? '', 'volumes', plugin, name);
  }

  /** Sets the volume up (idempotent) and returns where it lives; undefined for a type not handled here. */
  async setUp(pod: V1Pod, vol: V1Volume): Promise<VolumeMountSource | undefined> {
    if (vol.hostPath) return { hostPath: vol.hostPath.path, readonly: false };
    if (vol.emptyDir) {
      const hostPath = this.dir(pod, PluginDirs.emptyDir, vol.name);
      // World-writable whatever the umask, as the kubelet makes it.
      let fresh = (await mkdir(hostPath, { recursive: true, mode: 0o777 })) !== undefined;
      if (fresh) await chmod(hostPath, 0o777);
      if (vol.emptyDir.medium === 'Memory' && !(await this.tmpfs.isMountPoint(hostPath))) {
        const size = await this.memoryVolumeSize(pod, vol);
        await this.tmpfs.mountTmpfs(hostPath, size).catch((err: Error) => {
          throw volumeError(vol, `mount tmpfs: ${err.message}`);
        });
        fresh = true;
      }
      // Only when it is set up, as the kubelet's emptyDir does before it marks the volume ready:
      // what the pod wrote since keeps the owners and modes it gave.
      const fsGroup = pod.spec?.securityContext?.fsGroup;
      if (fresh && fsGroup != null) await setVolumeOwnership(hostPath, fsGroup, false);
      return { hostPath, readonly: false };
    }
    const type = apiVolumeType(vol);
    if (!type) return undefined;
    const hostPath = this.dir(pod, PluginDirs[type], vol.name);
    await this.write(hostPath, pod, vol);
    return { hostPath, readonly: true };
  }

  /**
   * The tmpfs size of a memory-backed emptyDir, as the kubelet computes it (SizeMemoryBackedVolumes):
   * the node's allocatable memory, lowered to the pod's memory limit, lowered to the volume's
   * sizeLimit. A writer past it gets ENOSPC, so such a volume never outgrows its sizeLimit.
   * Without a node to read (no object source), the bounds that are known apply.
   */
  private async memoryVolumeSize(pod: V1Pod, vol: V1Volume): Promise<number | undefined> {
    let size: bigint | undefined;
    const lower = (q: bigint | undefined) => {
      if (q !== undefined && q > 0n && (size === undefined || q <= size)) size = q;
    };
    const allocatable = (await this.objects?.getNode(pod).catch(() => undefined))?.status?.allocatable
      ?.memory;
    if (allocatable !== undefined) lower(Quantity.fromJSON(allocatable).value());
    lower(podMemoryLimit(pod));
    if (vol.emptyDir?.sizeLimit !== undefined) lower(Quantity.fromJSON(vol.emptyDir.sizeLimit).value());
    return size === undefined ? undefined : Number(size);
  }

  /**
   * Tears the pod's emptyDir volumes down once none of its containers runs (the kubelet unmounts
   * a terminated pod's volumes, and emptyDir's TearDown deletes the data): tmpfs ones are
   * unmounted, then every directory is removed. Returns what failed; the rest still goes.
   */
  async tearDownEmptyDirs(podUid: string): Promise<Error[]> {
    const root = join(this.podsDir, podUid, 'volumes', PluginDirs.emptyDir);
    const errors: Error[] = [];
    for (const name of await readdir(root).catch(() => [] as string[])) {
      const dir = join(root, name);
      try {
        if (await this.tmpfs.isMountPoint(dir)) await this.tmpfs.unmount(dir);
        await rm(dir, { recursive: true, force: true });
      } catch (err) {
        errors.push(err as Error);
      }
    }
    return errors;
  }

  /**
   * Rewrites the pod's API-projected volumes that are set up, from the objects as they are now
   * (the kubelet's periodic remount). A volume whose objects cannot be read keeps its files.
   * Returns the names of the volumes that changed and the errors of those that failed.
   */
  async refresh(pod: V1Pod): Promise<{ updated: string[]; errors: Error[] }> {
    const updated: string[] = [];
    const errors: Error[] = [];
    for (const vol of pod.spec?.volumes ?? []) {
      const type = apiVolumeType(vol);
      if (!type) continue;
      const dir = this.dir(pod, PluginDirs[type], vol.name);
      const setUp = await access(join(dir, '..data')).then(
        () => true,
        () => false,
      );
      if (!setUp) continue;
      try {
        if (await this.write(dir, pod, vol)) updated.push(vol.name);
      } catch (err) {
        errors.push(err as Error);
      }
    }
    return { updated, errors };
  }

  private write(dir: string, pod: V1Pod, vol: V1Volume): Promise<boolean> {
    const prev = this.writes.get(dir) ?? Promise.resolve();
    const next = prev
      .catch(() => undefined)
      .then(async () => {
        const fsGroup = pod.spec?.securityContext?.fsGroup;
        const setPerms = fsGroup != null ? (d: string) => setVolumeOwnership(d, fsGroup, true) : undefined;
        return writePayload(dir, await this.payload(pod, vol), new Date(), setPerms);
      });
    this.writes.set(dir, next);
    // Forget the dir once its last write settled, so removed pods leave nothing behind.
    const forget = () => {
      if (this.writes.get(dir) === next) this.writes.delete(dir);
    };
    next.then(forget, forget);
    return next;
  }

  private async payload(pod: V1Pod, vol: V1Volume): Promise<Payload> {
    const out: Payload = new Map();
    try {
      if (vol.configMap) {
        const { name = '', items, optional, defaultMode } = vol.configMap;
        await this.projectKeys(out, pod, 'configmap', { name, items, optional }, defaultMode);
      } else if (vol.secret) {
        const { secretName = '', items, optional, defaultMode } = vol.secret;
        await this.projectKeys(out, pod, 'secret', { name: secretName, items, optional }, defaultMode);
      } else if (vol.downwardAPI) {
        await this.projectFields(out, pod, vol.downwardAPI.items ?? [], vol.downwardAPI.defaultMode);
      } else if (vol.projected) {
        for (const src of vol.projected.sources ?? []) {
          await this.projectSource(out, pod, src, vol.projected.defaultMode);
        }
      }
    } catch (err) {
      throw volumeError(vol, (err as Error).message);
    }
    return out;
  }

  private async projectSource(out: Payload, pod: V1Pod, src: V1VolumeProjection, defaultMode?: number) {
    if (src.configMap) await this.projectKeys(out, pod, 'configmap', src.configMap, defaultMode);
    if (src.secret) await this.projectKeys(out, pod, 'secret', src.secret, defaultMode);
    if (src.downwardAPI) await this.projectFields(out, pod, src.downwardAPI.items ?? [], defaultMode);
    const sat = src.serviceAccountToken;
    if (sat) {
      if (!this.objects) throw new Error('service account tokens need an API source');
      const token = await this.objects.getServiceAccountToken(
        pod,
        sat.audience || undefined,
        sat.expirationSeconds ?? DefaultTokenExpirationSeconds,
      );
      out.set(sat.path, { data: Buffer.from(token, 'utf8'), mode: defaultMode ?? DefaultMode });
    }
  }

  /** A config map's or secret's keys as files: the listed items, or every key. */
  private async projectKeys(
    out: Payload,
    pod: V1Pod,
    kind: ObjectKind,
    ref: Pick<V1ConfigMapProjection, 'name' | 'optional'> & { items?: V1KeyToPath[] },
    defaultMode = DefaultMode,
  ): Promise<void> {
    const optional = ref.optional === true;
    const data = await readObjectData(this.objects, kind, pod, ref.name ?? '', optional);
    if (!data) return;
    if (!ref.items?.length) {
      for (const [key, value] of data) out.set(key, { data: value, mode: defaultMode });
      return;
    }
    for (const item of ref.items) {
      const value = data.get(item.key);
      if (value === undefined) {
        if (optional) continue;
        throw new Error(
          `${kind} references non-existent ${kind === 'configmap' ? 'config' : 'secret'} key: ${item.key}`,
        );
      }
      out.set(item.path, { data: value, mode: item.mode ?? defaultMode });
    }
  }

  private async projectFields(
    out: Payload,
    pod: V1Pod,
    items: V1DownwardAPIVolumeFile[],
    defaultMode = DefaultMode,
  ): Promise<void> {
    for (const item of items) {
      let value: string | undefined;
      if (item.fieldRef) {
        value = metadataFieldValue(pod, item.fieldRef.fieldPath);
        if (value === undefined) throw new Error(`unsupported fieldRef "${item.fieldRef.fieldPath}"`);
      } else if (item.resourceFieldRef) {
        const name = item.resourceFieldRef.containerName;
        const c = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find(
          (x) => x.name === name,
        );
        if (!c) throw new Error(`container "${name}" not found in the pod`);
        value = await resourceFieldValue(pod, c, item.resourceFieldRef, this.objects);
      } else continue;
      out.set(item.path, { data: Buffer.from(value, 'utf8'), mode: item.mode ?? defaultMode });
    }
  }
}

/**
 * The pod cgroup's memory limit (ResourceConfigForPod): the containers' limits summed, or the
 * largest init container's when that is more; none when any container has no limit.
 */
function podMemoryLimit(pod: V1Pod): bigint | undefined {
  const limit = (c: { resources?: { limits?: Record<string, unknown> } }) => {
    const v = c.resources?.limits?.memory;
    return v === undefined ? undefined : Quantity.fromJSON(v as string).value();
  };
  let sum = 0n;
  for (const c of pod.spec?.containers ?? []) {
    const l = limit(c);
    if (l === undefined) return undefined;
    sum += l;
  }
  for (const c of pod.spec?.initContainers ?? []) {
    const l = limit(c);
    if (l === undefined) return undefined;
    if (l > sum) sum = l;
  }
  return sum;
}
