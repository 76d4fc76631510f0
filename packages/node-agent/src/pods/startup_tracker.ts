// When each pod got through each step of its start-up, for the harness's latency breakdown: the
// watch delivered it, admission let it in, its worker began the first pass, the runtime created its
// sandbox (RunPodSandbox, CNI included) and its containers (CreateContainer, StartContainer), and
// the API server accepted a status with every container running. Like the kubelet's
// pod_startup_latency_tracker, but with every step and per pod, served as JSON on the kubelet
// server (GET /debug/startup). The pod layer tells it about admission and workers; the CRI client
// and the pod API are wrapped, since the CRI requests (which name the pod) and the status patches
// are where the runtime and the API server answer. Times are Unix milliseconds from the agent's
// clock; the harness on the same host puts them next to its own.

import type { Clock } from '@kh/apimachinery';
import type { CriCallOptions, CriClient } from '@kh/cri-api';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { PodApi } from '../api/pod_api.js';
import type { PodSource } from '../types/pod_update.js';

/** One pod's start-up. Absent fields: the step has not happened (yet, or in this agent's life). */
export interface PodStartupRecord {
  uid: string;
  namespace: string;
  name: string;
  /** A source delivered the pod to the sync loop. */
  seenAt: number;
  admittedAt?: number;
  /** The pod's worker began its first pass. */
  workerStartedAt?: number;
  /** When that pass ended each step of `prepare` before the runtime's (PREPARE_STEPS). */
  preparedAt?: Partial<Record<Exclude<PrepareStep, 'runtime'>, number>>;
  /** The first RunPodSandbox was sent, and the first one that succeeded returned. */
  sandboxStartedAt?: number;
  sandboxReadyAt?: number;
  /** Time spent in CreateContainer and in StartContainer calls after the sandbox was ready. */
  createMs: number;
  startMs: number;
  /** The last StartContainer before completion returned. */
  startedAt?: number;
  /** The API server accepted a status with every container running: start-up is complete. */
  statusWrittenAt?: number;
}

/**
 * The stages of a pod's start-up, in order; each is the time from the step before it (`watch` from
 * the pod's creation) to its own end:
 * - watch: the agent's watch delivered the pod;
 * - admit: the sync loop dispatched it and admission let it in;
 * - worker: its worker began the first pass;
 * - prepare: that pass got to sending RunPodSandbox (the runtime's view of the pod, pull secrets);
 * - sandbox: RunPodSandbox, CNI included;
 * - image: between the calls below: the sandbox's IP, the image check or pull, each container's config;
 * - create, start: CreateContainer and StartContainer calls, all containers;
 * - status: the API server accepted a status with every container running.
 */
export const STARTUP_STAGES = [
  'watch',
  'admit',
  'worker',
  'prepare',
  'sandbox',
  'image',
  'create',
  'start',
  'status',
] as const;

export type StartupStage = (typeof STARTUP_STAGES)[number];

/**
 * Each stage's length (STARTUP_STAGES order) and their total, from the pod's creation to its
 * status written; undefined when the record lacks a step. `createdAt` is when the pod appeared in
 * the API as its creator saw it (Unix ms); the agent's watch can see it first, so the earlier of
 * the two starts the clock.
 */
export function startupStages(
  r: PodStartupRecord,
  createdAt?: number,
): { totalMs: number; stagesMs: number[] } | undefined {
  const { admittedAt, workerStartedAt, sandboxStartedAt, sandboxReadyAt, startedAt, statusWrittenAt } = r;
  if (
    admittedAt === undefined ||
    workerStartedAt === undefined ||
    sandboxStartedAt === undefined ||
    sandboxReadyAt === undefined ||
    startedAt === undefined ||
    statusWrittenAt === undefined
  )
    return undefined;
  const t0 = Math.min(createdAt ?? r.seenAt, r.seenAt);
  return {
    totalMs: statusWrittenAt - t0,
    stagesMs: [
      r.seenAt - t0,
      admittedAt - r.seenAt,
      workerStartedAt - admittedAt,
      sandboxStartedAt - workerStartedAt,
      sandboxReadyAt - sandboxStartedAt,
      startedAt - sandboxReadyAt - r.createMs - r.startMs,
      r.createMs,
      r.startMs,
      statusWrittenAt - startedAt,
    ],
  };
}

/**
 * The steps of `prepare`, in order, each from the end of the one before (`status` from the
 * worker's start):
 * - status: the pod's allocated resources and the status the pass reports before it acts;
 * - cgroups: the QoS tiers refreshed and the pod's cgroup made (the container manager);
 * - secrets: the pod's image pull secrets read from the API;
 * - runtime: the runtime manager's pass up to RunPodSandbox (its actions, the sandbox's config).
 */
export const PREPARE_STEPS = ['status', 'cgroups', 'secrets', 'runtime'] as const;

export type PrepareStep = (typeof PREPARE_STEPS)[number];

/** Each prepare step's length (PREPARE_STEPS order); undefined when the record lacks a step. */
export function prepareSteps(r: PodStartupRecord): number[] | undefined {
  const { workerStartedAt, preparedAt, sandboxStartedAt } = r;
  const ends = [preparedAt?.status, preparedAt?.cgroups, preparedAt?.secrets, sandboxStartedAt];
  if (workerStartedAt === undefined || ends.some((t) => t === undefined)) return undefined;
  return (ends as number[]).map((t, i) => t - ((ends as number[])[i - 1] ?? workerStartedAt));
}

/** The body of GET /debug/startup. */
export interface PodStartupList {
  kind: 'PodStartupList';
  items: PodStartupRecord[];
}

/** What the pod layer reports (pod_lifecycle.ts, pod_workers.ts). */
export interface StartupEvents {
  admitted(uid: string): void;
  workerStarted(uid: string): void;
  /** The first pass ended a step of `prepare` (the runtime's ends with RunPodSandbox). */
  prepared(uid: string, step: Exclude<PrepareStep, 'runtime'>): void;
}

/** Records kept: past a full node (110 pods), so a finished cell's pods are still there to read. */
const DEFAULT_CAPACITY = 1_000;

export class PodStartupTracker implements StartupEvents {
  private readonly records = new Map<string, PodStartupRecord & { containers: number }>();
  /** namespace/name → uid of the newest pod by that name (status patches name the pod, not its uid). */
  private readonly byName = new Map<string, string>();
  /** Created, not yet started containers → their pod's uid. */
  private readonly pending = new Map<string, string>();
  private readonly capacity: number;

  constructor(private readonly opts: { clock: Clock; capacity?: number }) {
    this.capacity = opts.capacity ?? DEFAULT_CAPACITY;
  }

  /** Records (oldest first), those of one namespace when given, without internal fields. */
  list(namespace?: string): PodStartupRecord[] {
    return [...this.records.values()]
      .filter((r) => namespace === undefined || r.namespace === namespace)
      .map(({ containers: _, ...r }) => r);
  }

  seen(pod: V1Pod): void {
    const uid = pod.metadata?.uid;
    if (!uid || this.records.has(uid)) return;
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    this.records.set(uid, {
      uid,
      namespace,
      name,
      seenAt: this.now(),
      createMs: 0,
      startMs: 0,
      containers: pod.spec?.containers?.length ?? 0,
    });
    this.byName.set(`${namespace}/${name}`, uid);
    this.trim();
  }

  admitted(uid: string): void {
    const r = this.open(uid);
    if (r && r.admittedAt === undefined) r.admittedAt = this.now();
  }

  workerStarted(uid: string): void {
    const r = this.open(uid);
    if (r && r.workerStartedAt === undefined) r.workerStartedAt = this.now();
  }

  prepared(uid: string, step: Exclude<PrepareStep, 'runtime'>): void {
    const r = this.open(uid);
    if (!r || r.sandboxStartedAt !== undefined || r.preparedAt?.[step] !== undefined) return;
    r.preparedAt = { ...r.preparedAt, [step]: this.now() };
  }

  /** The source, with every pod it delivers recorded as seen first. */
  source(source: PodSource): PodSource {
    return {
      ready: () => source.ready(),
      run: (signal, deliver) =>
        source.run(signal, (update) => {
          if (update.op === 'ADD' || update.op === 'UPDATE') for (const p of update.pods) this.seen(p);
          deliver(update);
        }),
    };
  }

  /** The pod API, with a status patch that shows every container running completing start-up. */
  podApi(api: PodApi): PodApi {
    return {
      getPod: (ns, name) => api.getPod(ns, name),
      deletePod: (ns, name, uid) => api.deletePod(ns, name, uid),
      getSecret: (ns, name) => api.getSecret(ns, name),
      patchPodStatus: async (ns, name, status, stored) => {
        const patched = await api.patchPodStatus(ns, name, status, stored);
        const r = this.open(this.byName.get(`${ns}/${name}`) ?? '');
        if (r && allRunning(status, r.containers)) r.statusWrittenAt = this.now();
        return patched;
      },
    };
  }

  /**
   * The CRI client, with RunPodSandbox, CreateContainer and StartContainer timed for the pods
   * still starting; every other call goes straight through.
   */
  cri(cri: CriClient): CriClient {
    /** `call`, timed for the pod `uidOf` names when its start-up is under way. */
    const timed = <Req, Res>(
      call: (req: Req, opts?: CriCallOptions) => Promise<Res>,
      uidOf: (req: Req) => string | undefined,
      done: (r: PodStartupRecord, req: Req, startedAt: number, result?: Res) => void,
    ) => {
      return async (req: Req, opts?: CriCallOptions): Promise<Res> => {
        const r = this.open(uidOf(req) ?? '');
        const startedAt = this.now();
        try {
          const result = await call(req, opts);
          if (r) done(r, req, startedAt, result);
          return result;
        } catch (err) {
          if (r) done(r, req, startedAt);
          throw err;
        }
      };
    };
    const overrides: Partial<CriClient> = {
      runPodSandbox: timed(
        cri.runPodSandbox.bind(cri),
        (req) => req?.config?.metadata?.uid,
        (r, _req, startedAt, result) => {
          r.sandboxStartedAt ??= startedAt;
          if (result && r.sandboxReadyAt === undefined) r.sandboxReadyAt = this.now();
        },
      ),
      // Calls before the sandbox is ready (none, unless the pod was adopted) are not start-up.
      createContainer: timed(
        cri.createContainer.bind(cri),
        (req) => req?.sandboxConfig?.metadata?.uid,
        (r, _req, startedAt, result) => {
          if (r.sandboxReadyAt === undefined) return;
          r.createMs += this.now() - startedAt;
          if (result) this.pending.set(result.containerId, r.uid);
        },
      ),
      startContainer: timed(
        cri.startContainer.bind(cri),
        (req) => this.pending.get(req?.containerId ?? ''),
        (r, req, startedAt, result) => {
          this.pending.delete(req?.containerId ?? '');
          r.startMs += this.now() - startedAt;
          if (result) r.startedAt = this.now();
        },
      ),
    };
    // Not a proxy of the client itself: its calls are read-only, non-configurable properties,
    // which a proxy must hand out unchanged.
    return new Proxy({} as CriClient, {
      get(_, key) {
        if (Object.hasOwn(overrides, key)) return overrides[key as keyof CriClient];
        const v = Reflect.get(cri, key);
        // Methods that use the client's private fields (close) must run on the client itself.
        return typeof v === 'function' ? v.bind(cri) : v;
      },
    });
  }

  /** The record of a pod whose start-up is still under way. */
  private open(uid: string): (PodStartupRecord & { containers: number }) | undefined {
    const r = this.records.get(uid);
    return r && r.statusWrittenAt === undefined ? r : undefined;
  }

  private now(): number {
    return this.opts.clock.now();
  }

  private trim(): void {
    for (const uid of this.records.keys()) {
      if (this.records.size <= this.capacity) break;
      const r = this.records.get(uid)!;
      this.records.delete(uid);
      if (this.byName.get(`${r.namespace}/${r.name}`) === uid) this.byName.delete(`${r.namespace}/${r.name}`);
    }
    // A container whose start never came holds its entry until the map outgrows the records.
    for (const id of this.pending.keys()) {
      if (this.pending.size <= this.capacity) break;
      this.pending.delete(id);
    }
  }
}

function allRunning(status: V1PodStatus, containers: number): boolean {
  const statuses = status.containerStatuses ?? [];
  return containers > 0 && statuses.length === containers && statuses.every((c) => c.state?.running);
}
