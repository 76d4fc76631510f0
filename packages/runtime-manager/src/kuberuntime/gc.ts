// Container garbage collection over CRI (the kubelet's kuberuntime_gc.go): dead containers (with
// their logs), dead sandboxes, and log directories of pods that are gone, in that order. Which
// ones go is decided in gc_policy.ts; this file lists, removes and reports.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isNotFound } from '@kh/cri-api';
import type { ContainerGCPolicy, PodStateProvider } from '../container/runtime.js';
import { removeContainer, toContainerState } from './container.js';
import { type ManagerContext, nsToMs } from './context.js';
import {
  type GCContext,
  selectContainersToEvict,
  selectPodLogDirsToRemove,
  selectSandboxesToEvict,
} from './gc_policy.js';
import { ContainerNameLabel, PodUidLabel } from './labels.js';
import { sandboxState } from './sandbox.js';

export function validateContainerGCPolicy(p: ContainerGCPolicy): void {
  if (p.minAgeMs < 0) throw new RangeError(`minAge must be >= 0, got ${p.minAgeMs}ms`);
  if (p.maxContainers >= 0 && p.maxPerPodContainer > p.maxContainers) {
    throw new RangeError(
      `maxPerPodContainer (${p.maxPerPodContainer}) must not be greater than maxContainers (${p.maxContainers})`,
    );
  }
}

export interface ContainerGCReport {
  removedContainers: string[];
  removedSandboxes: string[];
  removedLogDirs: string[];
  errors: Error[];
}

export class ContainerGC {
  constructor(
    private readonly ctx: ManagerContext,
    /** Which pods are gone or terminated (the kubelet's podStateProvider). */
    private readonly pods: PodStateProvider,
  ) {}

  /** One pass; throws an AggregateError of everything that failed, after doing the rest. */
  async garbageCollect(
    policy: ContainerGCPolicy,
    allSourcesReady: boolean,
    evictNonDeletedPods: boolean,
  ): Promise<void> {
    const report = await this.garbageCollectWithReport(policy, allSourcesReady, evictNonDeletedPods);
    if (report.errors.length) {
      throw new AggregateError(
        report.errors,
        `container GC: ${report.errors.map((e) => e.message).join('; ')}`,
      );
    }
  }

  /** Like garbageCollect, but returns what was removed and collects errors instead of throwing. */
  async garbageCollectWithReport(
    policy: ContainerGCPolicy,
    allSourcesReady: boolean,
    evictNonDeletedPods: boolean,
  ): Promise<ContainerGCReport> {
    validateContainerGCPolicy(policy);
    const gc: GCContext = {
      now: this.ctx.clock.now(),
      allSourcesReady,
      evictNonDeletedPods,
      pods: this.pods,
    };
    const report: ContainerGCReport = {
      removedContainers: [],
      removedSandboxes: [],
      removedLogDirs: [],
      errors: [],
    };
    await this.#evictContainers(policy, gc, report);
    await this.#evictSandboxes(gc, report);
    await this.#evictPodLogsDirectories(gc, report);
    return report;
  }

  async #evictContainers(policy: ContainerGCPolicy, gc: GCContext, report: ContainerGCReport): Promise<void> {
    const { ctx } = this;
    const listed = (await ctx.cri.listContainers({})).containers.filter((c) => c.labels[PodUidLabel]);
    const victims = selectContainersToEvict(
      listed.map((c) => ({
        id: c.id,
        podUid: c.labels[PodUidLabel]!,
        name: c.labels[ContainerNameLabel] ?? c.metadata?.name ?? '',
        createdAt: nsToMs(c.createdAt),
        state: toContainerState(c.state),
      })),
      policy,
      gc,
    );
    for (const v of victims) {
      try {
        // A container in unknown state may still hold resources: stop it before removal.
        if (v.state === 'unknown') await ctx.cri.stopContainer({ containerId: v.id, timeout: 0n });
        await removeContainer(ctx, v.id);
        report.removedContainers.push(v.id);
      } catch (err) {
        report.errors.push(err as Error);
      }
    }
  }

  /** Sandboxes that are not ready and have no containers left, listed after the containers went. */
  async #evictSandboxes(gc: GCContext, report: ContainerGCReport): Promise<void> {
    const { ctx } = this;
    const [sandboxes, remaining] = await Promise.all([
      ctx.cri.listPodSandbox({}),
      ctx.cri.listContainers({}),
    ]);
    const withContainers = new Set(remaining.containers.map((c) => c.podSandboxId));
    const deadSandboxes = selectSandboxesToEvict(
      sandboxes.items
        .filter((s) => s.labels[PodUidLabel] ?? s.metadata?.uid)
        .map((s) => ({
          id: s.id,
          podUid: s.labels[PodUidLabel] ?? s.metadata?.uid ?? '',
          createdAt: nsToMs(s.createdAt),
          ready: sandboxState(s) === 'ready',
        })),
      withContainers,
      gc,
    );
    for (const s of deadSandboxes) {
      try {
        await ctx.cri.removePodSandbox({ podSandboxId: s.id });
        report.removedSandboxes.push(s.id);
      } catch (err) {
        if (!isNotFound(err)) report.errors.push(err as Error);
      }
    }
  }

  async #evictPodLogsDirectories(gc: GCContext, report: ContainerGCReport): Promise<void> {
    const root = this.ctx.podLogsRootDir;
    let dirs: string[] = [];
    try {
      dirs = await readdir(root);
    } catch {
      // No log root yet: nothing to collect.
    }
    for (const d of selectPodLogDirsToRemove(dirs, gc)) {
      try {
        await rm(join(root, d), { recursive: true, force: true });
        report.removedLogDirs.push(d);
      } catch (err) {
        report.errors.push(err as Error);
      }
    }
  }
}
