import { normalizeImageRef } from '@kh/apimachinery';

/** What scripted behaviour is matched against when a container starts or is exec'd into. */
export interface ContainerInfo {
  id: string;
  /** Container name from ContainerConfig.metadata.name. */
  name: string;
  /** Normalised image reference the container was created from. */
  image: string;
  labels: Record<string, string>;
  podSandboxId: string;
}

/**
 * Selects containers: a string is an exact container name or an image reference (compared after
 * normalisation, so "busybox" matches "docker.io/library/busybox:latest"); a RegExp is tested
 * against the name and the normalised image reference; a function decides freely.
 */
export type ContainerMatcher = string | RegExp | ((c: ContainerInfo) => boolean);

export interface ContainerExitScript {
  /** Time after StartContainer at which the process exits. */
  afterMs: number;
  exitCode: number;
  /** Defaults to "Completed" for exit code 0 and "Error" otherwise, as containerd reports. */
  reason?: string;
  message?: string;
}

/** Selects ExecSync commands: a string matches the argv joined by spaces; a RegExp is tested on it. */
export type ExecMatcher = string | RegExp | ((cmd: string[], c: ContainerInfo) => boolean);

export interface ExecScript {
  stdout?: string;
  stderr?: string;
  exitCode?: number;
  /** Time the command takes; with an ExecSync timeout shorter than this the call fails. */
  delayMs?: number;
  /** Never finishes: the call ends in DEADLINE_EXCEEDED after the request's timeout. */
  hang?: boolean;
}

/** Usage reported by ContainerStats / ListContainerStats for matching containers (default: zeros). */
export interface ContainerStatsScript {
  cpuUsageCoreNanoSeconds?: bigint | number;
  memoryWorkingSetBytes?: bigint | number;
  writableLayerUsedBytes?: bigint | number;
  writableLayerInodesUsed?: bigint | number;
}

export interface PullFailure {
  /** e.g. new NotFoundError('manifest unknown') or new UnavailableError('registry down'). */
  error: Error;
  /** Fail only this many pulls, then succeed normally. Default: every pull. */
  times?: number;
}

interface Rule<M, V> {
  matcher: M;
  value: V;
  /** Remaining uses; undefined = unlimited. */
  times?: number;
}

function matchContainer(m: ContainerMatcher, c: ContainerInfo): boolean {
  if (typeof m === 'string') return m === c.name || normalizeImageRef(m) === c.image;
  if (m instanceof RegExp) return m.test(c.name) || m.test(c.image);
  return m(c);
}

function matchExec(m: ExecMatcher, cmd: string[], c: ContainerInfo): boolean {
  if (typeof m === 'function') return m(cmd, c);
  const line = cmd.join(' ');
  return typeof m === 'string' ? m === line : m.test(line);
}

function takeFirst<M, V>(rules: Rule<M, V>[], match: (m: M) => boolean): V | undefined {
  // Newest rule wins, so a test can override an earlier, broader script.
  for (let i = rules.length - 1; i >= 0; i--) {
    const rule = rules[i]!;
    if (!match(rule.matcher)) continue;
    if (rule.times !== undefined && --rule.times <= 0) rules.splice(i, 1);
    return rule.value;
  }
  return undefined;
}

/** Scripted behaviour of a FakeRuntime (reach it as `fake.script`). */
export class FakeScript {
  readonly #exits: Rule<ContainerMatcher, ContainerExitScript>[] = [];
  readonly #execs: Rule<ExecMatcher, ExecScript>[] = [];
  readonly #pullFailures: Rule<string | RegExp, Error>[] = [];
  readonly #registry = new Map<string, bigint>();
  readonly #stats: Rule<ContainerMatcher, ContainerStatsScript>[] = [];

  /** Matching containers exit `afterMs` after they start, with `exitCode`. */
  containerExit(matcher: ContainerMatcher, exit: ContainerExitScript): this {
    this.#exits.push({ matcher, value: exit });
    return this;
  }

  /** ExecSync of a matching command returns this result (default for unscripted: exit 0, no output). */
  execResult(matcher: ExecMatcher, result: ExecScript, options: { times?: number } = {}): this {
    this.#execs.push({ matcher, value: result, times: options.times });
    return this;
  }

  /** Makes an image pullable from the fake "registry" (PullImage of anything else is NOT_FOUND). */
  registryImage(ref: string, sizeBytes: number | bigint): this {
    this.#registry.set(normalizeImageRef(ref), BigInt(sizeBytes));
    return this;
  }

  /** PullImage of a matching reference (normalised; RegExp or exact string) fails with `error`. */
  pullFailure(matcher: string | RegExp, failure: PullFailure): this {
    const m = typeof matcher === 'string' ? normalizeImageRef(matcher) : matcher;
    this.#pullFailures.push({ matcher: m, value: failure.error, times: failure.times });
    return this;
  }

  /** ContainerStats of matching containers report this usage. */
  containerStats(matcher: ContainerMatcher, stats: ContainerStatsScript): this {
    this.#stats.push({ matcher, value: stats });
    return this;
  }

  /** @internal */
  exitFor(c: ContainerInfo): ContainerExitScript | undefined {
    return takeFirst(this.#exits, (m) => matchContainer(m, c));
  }

  /** @internal */
  execFor(cmd: string[], c: ContainerInfo): ExecScript | undefined {
    return takeFirst(this.#execs, (m) => matchExec(m, cmd, c));
  }

  /** @internal */
  pullFailureFor(normalizedRef: string): Error | undefined {
    return takeFirst(this.#pullFailures, (m) =>
      typeof m === 'string' ? m === normalizedRef : m.test(normalizedRef),
    );
  }

  /** @internal */
  statsFor(c: ContainerInfo): ContainerStatsScript | undefined {
    return takeFirst(this.#stats, (m) => matchContainer(m, c));
  }

  /** @internal size of a pullable image, if the fake registry has it. */
  registrySize(normalizedRef: string): bigint | undefined {
    return this.#registry.get(normalizedRef);
  }
}
