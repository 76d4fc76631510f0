// Static pods from staticPodPath: every manifest file in the directory is one Pod, re-read each
// fileCheckFrequency and whenever the directory changes (DirectoryWatch, as the kubelet's inotify).
// Like the kubelet, the agent names the pod "<name>-<node>", binds it to
// this node, derives a stable UID from the node, file and content, and marks its source with
// the kubernetes.io/config.* annotations. Mirror pods in the API are the pod layer's job.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TimerClock } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import { parse } from 'yaml';
import {
  ConfigHashAnnotation,
  ConfigSourceAnnotation,
  type PodSource,
  type PodUpdate,
} from '../types/pod_update.js';
import { Waker } from '../util/clock.js';
import { type Logger, silentLogger } from '../util/log.js';
import { DirectoryWatch } from './dir_watch.js';
import { PodSnapshotDiff } from './pod_config.js';

/** One manifest read in a pass: its file name in the directory and its pod. */
interface Manifest {
  name: string;
  pod: V1Pod;
}

/** How long a lone event on a manifest that is still there waits for its pair. */
export const RECREATE_WINDOW_MS = 5_000;

/**
 * The watch's events on each manifest name, to tell a manifest deleted and written again from
 * one replaced. Node reports inotify's create, delete and move alike ('rename'), so the count
 * tells them apart: a replacing rename is one event, a delete and a create are two. The two can
 * straddle passes (a pass may read the old file, then see the delete's event before it ends
 * and the create's after), so a lone event on a manifest present before and after is kept for
 * RECREATE_WINDOW_MS rather than dropped with its pass.
 */
export class ManifestEvents {
  private readonly seen = new Map<string, number[]>();

  record(name: string, now: number): void {
    const times = this.seen.get(name);
    if (times) times.push(now);
    else this.seen.set(name, [now]);
  }

  /**
   * The names present in the last pass (`before`) and in this one (`after`) with two events or
   * more within the window: removed and written again. Every name this settles, and every name
   * absent from either pass (the snapshot diff sees its ADD or REMOVE), is forgotten.
   */
  recreated(before: ReadonlySet<string>, after: ReadonlySet<string>, now: number): Set<string> {
    const out = new Set<string>();
    for (const [name, times] of this.seen) {
      const recent = times.filter((t) => now - t <= RECREATE_WINDOW_MS);
      const kept = before.has(name) && after.has(name);
      if (kept && recent.length >= 2) out.add(name);
      if (!kept || recent.length !== 1) this.seen.delete(name);
      else this.seen.set(name, recent);
    }
    return out;
  }
}

export class FileStaticPodSource implements PodSource {
  private readonly diff = new PodSnapshotDiff('file');
  private loaded = false;
  /** The manifests of the last pass, by file name. */
  private files = new Set<string>();
  private readonly events = new ManifestEvents();

  constructor(
    private readonly opts: {
      path: string;
      nodeName: string;
      clock: TimerClock;
      periodMs: number;
      log?: Logger;
    },
  ) {}

  ready(): boolean {
    return this.loaded;
  }

  async run(signal: AbortSignal, deliver: (update: PodUpdate) => void): Promise<void> {
    const waker = new Waker();
    const watch = new DirectoryWatch(this.opts.path, (kind, file) => {
      if (kind === 'rename' && file) this.events.record(file, this.opts.clock.now());
      waker.kick();
    });
    try {
      while (!signal.aborted) {
        // Watch before reading, so that a change made during the read wakes the next pass.
        watch.ensure();
        const manifests = await this.readAll();
        if (manifests) {
          this.loaded = true;
          // The kubelet handles inotify's events one by one: a manifest deleted and written
          // again is a REMOVE and then an ADD, even when both happened before this pass read the
          // directory. Its pod is killed and started again (upstream's "recreate when file is
          // removed and recreated").
          const recreated = this.events.recreated(
            this.files,
            new Set(manifests.map((m) => m.name)),
            this.opts.clock.now(),
          );
          if (recreated.size > 0)
            for (const u of this.diff.set(manifests.filter((m) => !recreated.has(m.name)).map((m) => m.pod)))
              deliver(u);
          for (const u of this.diff.set(manifests.map((m) => m.pod))) deliver(u);
          this.files = new Set(manifests.map((m) => m.name));
        }
        await waker.wait(this.opts.clock, this.opts.periodMs, signal);
      }
    } finally {
      watch.close();
    }
  }

  /** All valid manifests, or undefined when the directory cannot be read (nothing is removed then). */
  private async readAll(): Promise<Manifest[] | undefined> {
    const log = this.opts.log ?? silentLogger;
    let names: string[];
    try {
      names = (await readdir(this.opts.path, { withFileTypes: true }))
        .filter((e) => e.isFile() && !e.name.startsWith('.'))
        .map((e) => e.name)
        .sort();
    } catch (e) {
      log.error('Unable to read static pod directory', { path: this.opts.path, err: e });
      return undefined;
    }
    const manifests: Manifest[] = [];
    for (const name of names) {
      const file = join(this.opts.path, name);
      try {
        manifests.push({
          name,
          pod: staticPodFromManifest(await readFile(file, 'utf8'), file, this.opts.nodeName),
        });
      } catch (e) {
        log.error('Skipping invalid static pod manifest', { file, err: e });
      }
    }
    return manifests;
  }
}

/** Parses and defaults one manifest; throws with the reason when it is not a usable Pod. */
export function staticPodFromManifest(text: string, file: string, nodeName: string): V1Pod {
  const doc = parse(text) as V1Pod | null;
  if (!doc || typeof doc !== 'object') throw new Error('not a Pod manifest');
  if (doc.kind !== 'Pod' || doc.apiVersion !== 'v1')
    throw new Error(`kind must be Pod and apiVersion v1, got ${doc.kind} ${doc.apiVersion}`);
  if (!doc.metadata?.name) throw new Error('metadata.name is required');
  const containers = doc.spec?.containers ?? [];
  if (containers.length === 0) throw new Error('spec.containers must not be empty');
  for (const [i, c] of containers.entries()) {
    if (!c.name || !c.image) throw new Error(`spec.containers[${i}] needs a name and an image`);
  }
  const pod = structuredClone(doc);
  const uid =
    doc.metadata.uid ||
    createHash('sha256').update(`host:${nodeName}\nfile:${file}\n${text}`).digest('hex').slice(0, 32);
  pod.metadata = {
    ...pod.metadata,
    name: `${doc.metadata.name}-${nodeName.toLowerCase()}`,
    namespace: doc.metadata.namespace || 'default',
    uid,
    annotations: {
      ...pod.metadata?.annotations,
      [ConfigHashAnnotation]: uid,
      [ConfigSourceAnnotation]: 'file',
    },
  };
  pod.spec = {
    ...pod.spec,
    containers,
    nodeName,
    // Static pods tolerate every NoExecute taint: nothing may evict them from their own node.
    tolerations: [...(pod.spec?.tolerations ?? []), { operator: 'Exists', effect: 'NoExecute' }],
  };
  return pod;
}
