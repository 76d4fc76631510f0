// The kubelet's user namespace manager (UserNamespacesSupport): every pod with hostUsers: false
// gets its own range of host UIDs/GIDs, the same for UIDs and GIDs, with container ID 0 mapped to
// the range's first ID. Ranges are slots of idsPerPod IDs carved from the node's pool; a pod's
// slot is written to a `userns` file in its pod directory, so a restarted agent hands the pod the
// same mapping, and it is freed when housekeeping finds the pod gone.

import { randomInt } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type IDMapping, NamespaceMode, type UserNamespace } from '@kh/cri-api';
import type { RuntimeHandler, UserNamespaceProvider } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';

/** IDs per pod must be a multiple of this (and it is the kubelet's default idsPerPod). */
export const USER_NS_UNIT_LENGTH = 65536;
/**
 * The pool when the node configures none (no subordinate IDs for a "kubelet" user): every whole
 * range above the first, so no pod is ever mapped onto the host's low, system IDs. With the
 * default idsPerPod that is every ID from 65536 up.
 */
export function defaultPool(idsPerPod: number): { firstId: number; length: number } {
  return { firstId: idsPerPod, length: Math.floor((2 ** 32 - idsPerPod) / idsPerPod) * idsPerPod };
}
/** The file in a pod's directory that holds its mapping. */
export const MAPPINGS_FILE = 'userns';

/** The `userns` file: one UID and one identical GID mapping, as the kubelet writes it. */
interface MappingsFile {
  uidMappings: IDMapping[];
  gidMappings: IDMapping[];
}

export interface UsernsManagerOptions {
  /** The agent's pods directory: <podsDir>/<uid>/userns. */
  podsDir: string;
  /** The pool must hold a range for every pod the node may run. */
  maxPods: number;
  /** KubeletConfiguration userNamespaces.idsPerPod; default 65536. */
  idsPerPod?: number;
  /** The node's pool of host IDs; default defaultPool(idsPerPod). */
  pool?: { firstId: number; length: number };
  /** The runtime's handlers from its last CRI Status; undefined until it answered. */
  runtimeHandlers(): readonly RuntimeHandler[] | undefined;
}

export class UsernsManager implements UserNamespaceProvider {
  /** Pod uid → first host ID of its range. */
  private readonly usedBy = new Map<string, number>();
  /** Slot indexes (relative to `off`) in use. */
  private readonly used = new Set<number>();
  /** Allocation, recording and release run one at a time, as under the kubelet's lock. */
  private lock: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly opts: UsernsManagerOptions,
    private readonly idsPerPod: number,
    /** The pool's first slot (first ID / idsPerPod) and its number of slots. */
    private readonly off: number,
    private readonly slots: number,
  ) {}

  /**
   * Checks the pool against idsPerPod and maxPods, with the kubelet's messages, then records the
   * ranges that pods already on disk hold. A mapping file it cannot read fails the start, as in
   * the kubelet: handing its range to another pod could share IDs between two pods.
   */
  static async create(opts: UsernsManagerOptions): Promise<UsernsManager> {
    const ids = opts.idsPerPod ?? USER_NS_UNIT_LENGTH;
    const { firstId, length } = opts.pool ?? defaultPool(ids);
    if (ids % USER_NS_UNIT_LENGTH !== 0)
      throw new Error(`kubelet user namespace length ${ids} is not a multiple of ${USER_NS_UNIT_LENGTH}`);
    if (firstId % ids !== 0)
      throw new Error(`kubelet user assigned ID ${firstId} is not a multiple of ${ids}`);
    // ID 0 on the host must never be mapped.
    if (firstId < ids)
      throw new Error(`kubelet user assigned ID ${firstId} must be greater or equal to ${ids}`);
    if (length % ids !== 0)
      throw new Error(`kubelet user assigned IDs length ${length} is not a multiple of ${ids}`);
    if (length / ids < opts.maxPods)
      throw new Error(`kubelet user assigned IDs are not enough to support ${opts.maxPods} pods`);
    const m = new UsernsManager(opts, ids, firstId / ids, length / ids);
    for (const uid of await m.podDirs()) {
      const file = await m.readFile(uid);
      if (file === undefined) continue;
      try {
        m.parseAndRecord(uid, file);
      } catch (e) {
        throw new Error(`record pod mappings for existing pod "${uid}": ${(e as Error).message}`);
      }
    }
    return m;
  }

  /**
   * The pod's CRI user namespace (the kubelet's GetOrCreateUserNamespaceMappings): mode NODE
   * unless it sets hostUsers: false; then mode POD with its range, read back from its file or
   * allocated now, once its runtime handler has announced user namespace support.
   */
  async getOrCreateUserNamespaceMappings(pod: V1Pod, runtimeHandler: string): Promise<UserNamespace> {
    if (pod.spec?.hostUsers !== false) return { mode: NamespaceMode.NODE, uids: [], gids: [] };
    this.checkHandler(runtimeHandler);
    const uid = pod.metadata?.uid ?? '';
    return this.locked(async () => {
      const content = await this.readFile(uid);
      let mapping: IDMapping;
      if (content !== undefined) {
        try {
          mapping = this.parseAndRecord(uid, content);
        } catch (e) {
          throw new Error(`user namespace: ${(e as Error).message}`);
        }
      } else {
        try {
          mapping = await this.createUserNs(uid);
        } catch (e) {
          throw new Error(`create user namespace: ${(e as Error).message}`);
        }
      }
      return { mode: NamespaceMode.POD, uids: [{ ...mapping }], gids: [{ ...mapping }] };
    });
  }

  /** Frees the pod's range and removes its file. */
  async release(podUid: string): Promise<void> {
    await this.locked(() => this.releaseLocked(podUid));
  }

  /**
   * Housekeeping (the kubelet's CleanupOrphanedPodUsernsAllocations): frees the range of every pod
   * that is neither desired nor running, whether found on disk or only in memory.
   */
  async cleanupOrphanedPodUsernsAllocations(known: ReadonlySet<string>): Promise<void> {
    await this.locked(async () => {
      const onDisk = await this.podDirs();
      for (const uid of new Set([...onDisk, ...this.usedBy.keys()])) {
        if (!known.has(uid)) await this.releaseLocked(uid);
      }
    });
  }

  /** The first host ID of the pod's range, if it holds one. */
  allocatedTo(podUid: string): number | undefined {
    return this.usedBy.get(podUid);
  }

  private checkHandler(runtimeHandler: string): void {
    const prefix =
      runtimeHandler === ''
        ? "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
        : `can't set \`spec.hostUsers: false\`, RuntimeClass handler ${JSON.stringify(runtimeHandler)} does not support user namespaces`;
    const handlers = this.opts.runtimeHandlers();
    if (!handlers) throw new Error(`${prefix}: runtime handlers are not set`);
    const handler = handlers.find((h) => h.name === runtimeHandler);
    if (!handler) throw new Error(`${prefix}: the handler ${JSON.stringify(runtimeHandler)} is not known`);
    if (!handler.supportsUserNamespaces) throw new Error(prefix);
  }

  private async createUserNs(uid: string): Promise<IDMapping> {
    const free = this.nextFree();
    if (free === undefined) throw new Error('could not find an empty slot to allocate a user namespace');
    const mapping = { containerId: 0, hostId: (free + this.off) * this.idsPerPod, length: this.idsPerPod };
    this.used.add(free);
    this.usedBy.set(uid, mapping.hostId);
    try {
      await this.writeFile(uid, { uidMappings: [mapping], gidMappings: [mapping] });
    } catch (e) {
      await this.releaseLocked(uid);
      throw e;
    }
    return mapping;
  }

  /** A free slot, scanning from a random one (as the kubelet's allocation bitmap does). */
  private nextFree(): number | undefined {
    if (this.used.size >= this.slots) return undefined;
    const start = randomInt(this.slots);
    for (let i = 0; i < this.slots; i++) {
      const slot = (start + i) % this.slots;
      if (!this.used.has(slot)) return slot;
    }
    return undefined;
  }

  /** Validates a mapping file as one this manager writes, and records its range for the pod. */
  private parseAndRecord(uid: string, content: string): IDMapping {
    let file: MappingsFile;
    try {
      file = JSON.parse(content) as MappingsFile;
    } catch (e) {
      throw new Error(`invalid user namespace mappings file: ${(e as Error).message}`);
    }
    const [u] = file.uidMappings ?? [];
    const [g] = file.gidMappings ?? [];
    if (file.uidMappings?.length !== 1 || !u)
      throw new Error('invalid user namespace configuration: no more than one mapping allowed.');
    if (file.gidMappings?.length !== 1 || !g)
      throw new Error('invalid user namespace configuration: GID and UID mappings should be identical.');
    if (u.hostId !== g.hostId || u.containerId !== g.containerId || u.length !== g.length)
      throw new Error('invalid user namespace configuration: GID and UID mapping should be identical');
    if (u.containerId !== 0) throw new Error('invalid user namespace configuration: UID 0 must be mapped');
    this.record(uid, u.hostId, u.length);
    return { hostId: u.hostId, containerId: 0, length: u.length };
  }

  private record(uid: string, from: number, length: number): void {
    if (length !== this.idsPerPod) throw new Error(`wrong user namespace length ${length}`);
    if (from % this.idsPerPod !== 0) throw new Error(`wrong user namespace offset specified ${from}`);
    const prev = this.usedBy.get(uid);
    if (prev !== undefined) {
      if (prev !== from) throw new Error(`different user namespace range already used by pod "${uid}"`);
      return;
    }
    const slot = from / this.idsPerPod - this.off;
    if (slot < 0 || slot >= this.slots) throw new Error(`id ${from} is out of range`);
    if (this.used.has(slot)) throw new Error(`range picked for pod "${uid}" already taken`);
    this.used.add(slot);
    this.usedBy.set(uid, from);
  }

  private async releaseLocked(uid: string): Promise<void> {
    await rm(join(this.opts.podsDir, uid, MAPPINGS_FILE), { force: true });
    const from = this.usedBy.get(uid);
    if (from === undefined) return;
    this.usedBy.delete(uid);
    this.used.delete(from / this.idsPerPod - this.off);
  }

  private async podDirs(): Promise<string[]> {
    try {
      return (await readdir(this.opts.podsDir, { withFileTypes: true }))
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
  }

  private async readFile(uid: string): Promise<string | undefined> {
    try {
      const content = await readFile(join(this.opts.podsDir, uid, MAPPINGS_FILE), 'utf8');
      return content === '' ? undefined : content;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  /** Atomic and durable: a crash leaves the old file or the new one, and the directory entry is synced. */
  private async writeFile(uid: string, content: MappingsFile): Promise<void> {
    const dir = join(this.opts.podsDir, uid);
    await mkdir(dir, { recursive: true, mode: 0o750 });
    const tmp = join(dir, `.${MAPPINGS_FILE}.tmp`);
    await writeFile(tmp, JSON.stringify(content), { mode: 0o600, flush: true });
    await rename(tmp, join(dir, MAPPINGS_FILE));
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  private locked<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => {});
    return run;
  }
}
