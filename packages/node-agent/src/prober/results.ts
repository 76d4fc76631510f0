// Probe results by container, one cache per probe type, with change notifications: the status
// manager takes readiness flips, pod workers re-sync on liveness and startup failures, and the
// runtime manager reads liveness/startup when it computes pod actions.
import type { ProbeResult, ProbeResults as RuntimeProbeResults } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import type { ProbeResults as StatusProbeResults } from '../status/generate.js';
import { bareContainerId } from '../types/container_id.js';
import type { ProbeType } from './probe_spec.js';

export type Result = 'success' | 'failure' | 'unknown';

export interface ResultUpdate {
  type: ProbeType;
  /** The runtime's container id, without the `containerd://` scheme. */
  containerId: string;
  result: Result;
  pod: V1Pod;
}

export class ResultsCache {
  private readonly results = new Map<string, Result>();

  constructor(
    readonly type: ProbeType,
    private readonly notify: (u: ResultUpdate) => void,
  ) {}

  get(containerId: string): Result | undefined {
    return this.results.get(bareContainerId(containerId));
  }

  /** Stores a result; listeners hear only about changes. */
  set(containerId: string, result: Result, pod: V1Pod): void {
    const id = bareContainerId(containerId);
    if (this.results.get(id) === result) return;
    this.results.set(id, result);
    this.notify({ type: this.type, containerId: id, result, pod });
  }

  remove(containerId: string): void {
    this.results.delete(bareContainerId(containerId));
  }
}

function asRuntimeResult(r: Result | undefined): ProbeResult | undefined {
  return r === 'success' || r === 'failure' ? r : undefined;
}

/** The three caches, seen as the runtime manager and the status generator want them. */
export class ProbeResultsStore {
  private readonly listeners = new Set<(u: ResultUpdate) => void>();
  readonly liveness = new ResultsCache('liveness', (u) => this.emit(u));
  readonly readiness = new ResultsCache('readiness', (u) => this.emit(u));
  readonly startup = new ResultsCache('startup', (u) => this.emit(u));

  cache(type: ProbeType): ResultsCache {
    return this[type];
  }

  /** Listens to result changes; returns the unsubscribe function. */
  onUpdate(listener: (u: ResultUpdate) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private emit(u: ResultUpdate): void {
    for (const l of this.listeners) l(u);
  }

  /** For KubeGenericRuntimeManager's `probeResults` option. */
  readonly forRuntime: RuntimeProbeResults = {
    liveness: (id) => asRuntimeResult(this.liveness.get(id)),
    startup: (id) => asRuntimeResult(this.startup.get(id)),
  };

  /** For generateAPIPodStatus's `probes` input. */
  readonly forStatus: StatusProbeResults = {
    ready: (_uid, id) =>
      this.readiness.get(id) === undefined ? undefined : this.readiness.get(id) === 'success',
    started: (_uid, id) =>
      this.startup.get(id) === undefined ? undefined : this.startup.get(id) === 'success',
  };
}
