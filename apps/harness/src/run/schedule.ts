// Which cell runs next, and on which node. A runtime gets several nodes (lanes); a cell's
// `isolation` says what it may share: 'namespace' cells pack together on one node, a 'node' cell
// has a node to itself, a 'world' cell runs alone in the run. Cells naming the same host resource
// (`exclusive`) never overlap, on any runtime; cells that share one (`shared`) overlap each other
// but not its exclusive holders. The kubelet's own node e2e suite makes the same
// split between parallel and [Serial] specs; lanes let the serial ones run side by side, each on
// its own node. `runScheduled` is the run's loop: it starts what the scheduler places, and waits
// for a cell to end or a held-back heavy cell's time to come.
import { setTimeout as delay } from 'node:timers/promises';
import type { Isolation } from '../framework/scenario.js';

export interface PlannedCell {
  runtime: string;
  scenario: string;
  isolation: Isolation;
  exclusive: readonly string[];
  /** Host resources it holds beside other sharers, never beside an exclusive holder (Scenario.shared). */
  shared?: readonly string[];
  /** Expected duration, for the order: the longest chains first. */
  estimateMs: number;
  /** Runs on a node with a disk of its own (Scenario.ownDisk), one of the nodes started for such cells. */
  ownDisk?: boolean;
  /**
   * Keeps the CPUs busy (Scenario.load 'heavy'): at most half of maxRunning such cells at once,
   * and none starts while another started less than `heavyStartSpacingMs` ago.
   */
  heavy?: boolean;
}

export interface Placement<N> {
  cell: PlannedCell;
  node: N;
}

export interface Pacing {
  /**
   * A heavy cell waits until every running heavy cell started at least this long ago, so that
   * their pod start-up bursts do not overlap. Default 0.
   */
  heavyStartSpacingMs?: number;
  /**
   * The clock, in ms; default the monotonic performance.now: a wall clock stepped back (a VM's
   * clock corrected) would hold every heavy cell for as long as the step.
   */
  now?: () => number;
}

interface Lane<N> {
  node: N;
  /** The node has a disk of its own: only ownDisk cells go there. */
  ownDisk: boolean;
  running: PlannedCell[];
  /** Out of service (`retire`): its running cells end as they will, nothing new is placed on it. */
  retired?: boolean;
}

/**
 * Cells are taken in one order: world cells first (they need an idle run, which the start is);
 * then by the longest chain they belong to: a cell holding a host resource counts the whole
 * serial chain of cells that hold it too, since that chain bounds the run; then by estimate.
 */
export function scheduleOrder(cells: readonly PlannedCell[]): PlannedCell[] {
  const chain = (c: PlannedCell) =>
    Math.max(
      c.estimateMs,
      cells
        .filter((o) => o.exclusive.some((name) => c.exclusive.includes(name)))
        .reduce((sum, o) => sum + o.estimateMs, 0),
    );
  const rank = new Map(cells.map((c, i) => [c, i]));
  return [...cells].sort(
    (a, b) =>
      Number(b.isolation === 'world') - Number(a.isolation === 'world') ||
      chain(b) - chain(a) ||
      b.estimateMs - a.estimateMs ||
      rank.get(a)! - rank.get(b)!,
  );
}

export class CellScheduler<N> {
  private readonly pending: PlannedCell[];
  private readonly lanes = new Map<string, Lane<N>[]>();
  private readonly held = new Set<string>();
  /** How many running cells share each host resource. */
  private readonly sharers = new Map<string, number>();
  private worldRunning = false;
  private readonly maxHeavy: number;
  /** When each running heavy cell started. */
  private readonly heavyStarts = new Map<PlannedCell, number>();
  private readonly spacingMs: number;
  readonly now: () => number;

  /**
   * @param nodes each runtime's started nodes; a cell of a runtime without nodes is never placed
   * @param maxPerNode how many 'namespace' cells share one node at most
   * @param maxRunning how many cells run at once in the whole run: the nodes share the host's CPUs
   * @param ownDisk whether a node has a disk of its own (ownDisk cells go only there, others never)
   */
  constructor(
    cells: readonly PlannedCell[],
    nodes: ReadonlyMap<string, readonly N[]>,
    private readonly maxPerNode: number,
    private readonly maxRunning = Number.POSITIVE_INFINITY,
    pacing: Pacing = {},
    ownDisk: (node: N) => boolean = () => false,
  ) {
    this.maxHeavy = Math.max(1, Math.floor(maxRunning / 2));
    this.spacingMs = pacing.heavyStartSpacingMs ?? 0;
    this.now = pacing.now ?? (() => performance.now());
    for (const c of cells)
      if (!nodes.get(c.runtime)?.length) throw new Error(`no node for ${c.runtime}/${c.scenario}`);
    this.pending = scheduleOrder(cells);
    for (const [runtime, ns] of nodes)
      this.lanes.set(
        runtime,
        ns.map((node) => ({ node, ownDisk: ownDisk(node), running: [] })),
      );
  }

  get done(): boolean {
    return this.pending.length === 0 && this.running() === 0;
  }

  /** Cells that may start now, each with its node; they count as running until `finish`. */
  take(): Placement<N>[] {
    const out: Placement<N>[] = [];
    for (const cell of [...this.pending]) {
      if (this.worldRunning || this.running() >= this.maxRunning) break;
      if (cell.isolation === 'world') {
        // Nothing after a waiting world cell starts, or it would wait for ever.
        if (this.running() > 0) break;
        this.worldRunning = true;
        out.push(this.start(cell, this.inService(cell.runtime)[0]!));
        break;
      }
      if (cell.exclusive.some((name) => this.held.has(name) || this.sharers.has(name))) continue;
      if (cell.shared?.some((name) => this.held.has(name))) continue;
      if (cell.heavy && (this.heavyStarts.size >= this.maxHeavy || this.now() < this.heavyFreeAt())) continue;
      const lane = this.laneFor(cell);
      if (lane) out.push(this.start(cell, lane));
    }
    return out;
  }

  /**
   * When (on `now`) a heavy cell that waits only for the start spacing may start; undefined when none waits
   * for it. The caller calls `take` again then, even if no cell has finished.
   */
  wakeAt(): number | undefined {
    // A heavy cell held back by the cap waits for a cell to finish, which wakes the caller anyway.
    if (this.heavyStarts.size >= this.maxHeavy || !this.pending.some((c) => c.heavy)) return undefined;
    const at = this.heavyFreeAt();
    return at > this.now() ? at : undefined;
  }

  finish(cell: PlannedCell): void {
    this.heavyStarts.delete(cell);
    for (const lanes of this.lanes.values())
      for (const lane of lanes) lane.running = lane.running.filter((c) => c !== cell);
    for (const name of cell.exclusive) this.held.delete(name);
    for (const name of cell.shared ?? []) {
      const left = (this.sharers.get(name) ?? 0) - 1;
      if (left > 0) this.sharers.set(name, left);
      else this.sharers.delete(name);
    }
    if (cell.isolation === 'world') this.worldRunning = false;
  }

  /**
   * Takes `node` out of service, for a node that can run no more cells (its container is gone):
   * the runtime's later cells go to its other nodes. Returns the cells that can no longer run at
   * all, the pending ones of a runtime that has no node left; they leave the schedule.
   */
  retire(node: N): PlannedCell[] {
    for (const [runtime, lanes] of this.lanes) {
      const lane = lanes.find((l) => l.node === node);
      if (!lane || lane.retired) continue;
      lane.retired = true;
      if (this.inService(runtime).length > 0) return [];
      const stranded = this.pending.filter((c) => c.runtime === runtime);
      for (const c of stranded) this.pending.splice(this.pending.indexOf(c), 1);
      return stranded;
    }
    return [];
  }

  /** The scenarios running on the same node as `cell`, which was placed. */
  besides(cell: PlannedCell): string[] {
    const lane = this.lanes.get(cell.runtime)?.find((l) => l.running.includes(cell));
    return (lane?.running ?? []).filter((c) => c !== cell).map((c) => c.scenario);
  }

  /** Cells not placed yet (after an interrupt: the ones to record as skipped). */
  waiting(): readonly PlannedCell[] {
    return [...this.pending];
  }

  private heavyFreeAt(): number {
    return Math.max(Number.NEGATIVE_INFINITY, ...this.heavyStarts.values()) + this.spacingMs;
  }

  private inService(runtime: string): Lane<N>[] {
    return (this.lanes.get(runtime) ?? []).filter((l) => !l.retired);
  }

  private laneFor(cell: PlannedCell): Lane<N> | undefined {
    const all = this.inService(cell.runtime);
    const own = all.filter((l) => l.ownDisk === Boolean(cell.ownDisk));
    // Cells whose kind of node did not start (or is gone) take the runtime's other nodes rather
    // than none: a disk cell on a node without a disk of its own may see other writers, but runs.
    const lanes = own.length > 0 ? own : all;
    if (cell.isolation === 'node') return lanes.find((l) => l.running.length === 0);
    // Shared cells pack onto the fullest node that still has room, which leaves whole nodes
    // free for the cells that need one. A heavy cell first avoids nodes that run a heavy cell: a
    // node's agent and shim are one event loop each and its dockerd one daemon, and two probe
    // suites on one Docker node pushed its execs past upstream's 1 s probe timeouts while other
    // nodes had room (t59b).
    const open = lanes.filter(
      (l) => l.running.length < this.maxPerNode && l.running.every((c) => c.isolation === 'namespace'),
    );
    const heavyOn = (l: Lane<N>) => (cell.heavy && l.running.some((c) => c.heavy) ? 1 : 0);
    return open.sort((a, b) => heavyOn(a) - heavyOn(b) || b.running.length - a.running.length)[0];
  }

  private start(cell: PlannedCell, lane: Lane<N>): Placement<N> {
    this.pending.splice(this.pending.indexOf(cell), 1);
    lane.running.push(cell);
    if (cell.heavy) this.heavyStarts.set(cell, this.now());
    for (const name of cell.exclusive) this.held.add(name);
    for (const name of cell.shared ?? []) this.sharers.set(name, (this.sharers.get(name) ?? 0) + 1);
    return { cell, node: lane.node };
  }

  private running(): number {
    let n = 0;
    for (const lanes of this.lanes.values()) for (const l of lanes) n += l.running.length;
    return n;
  }
}

/**
 * How many nodes a runtime gets: one per cell that needs a node to itself, plus one for the
 * shared cells, at most `max`.
 */
export function lanesFor(cells: readonly PlannedCell[], max: number): number {
  const alone = cells.filter((c) => c.isolation !== 'namespace').length;
  const shared = cells.some((c) => c.isolation === 'namespace') ? 1 : 0;
  return Math.max(1, Math.min(max, alone + shared));
}

/**
 * How many of a runtime's nodes have a disk of their own: one per ownDisk cell, at most `max`
 * (they run one cell at a time); the others' lanes (lanesFor) come on top, none when every cell
 * has its own disk.
 */
export function lanesWithOwnDisk(
  cells: readonly PlannedCell[],
  max: number,
): { plain: number; ownDisk: number } {
  const disk = cells.filter((c) => c.ownDisk).length;
  const plain = cells.filter((c) => !c.ownDisk);
  return { plain: disk > 0 && plain.length === 0 ? 0 : lanesFor(plain, max), ownDisk: Math.min(max, disk) };
}

/**
 * Runs the cells as `scheduler` places them, until every one has ended or `signal` aborts; then
 * waits for those still running. Cells never placed stay in `scheduler.waiting()`.
 */
export async function runScheduled<N>(
  scheduler: CellScheduler<N>,
  run: (placement: Placement<N>) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  while (!scheduler.done && !signal?.aborted) {
    for (const placement of scheduler.take()) {
      const running = run(placement).finally(() => {
        scheduler.finish(placement.cell);
        inFlight.delete(running);
      });
      inFlight.add(running);
    }
    const wakeAt = scheduler.wakeAt();
    if (inFlight.size === 0 && wakeAt === undefined) break;
    const waits = [...inFlight].map((p) => p.catch(() => {}));
    // The wake-up timer is dropped once anything ends the wait: it must not hold the process.
    const woken = new AbortController();
    if (wakeAt !== undefined) waits.push(sleepFor(wakeAt - scheduler.now(), woken.signal, signal));
    await Promise.race(waits);
    woken.abort();
  }
  await Promise.allSettled([...inFlight]);
}

/** Resolves after `ms`, or as soon as one of `signals` aborts. */
const sleepFor = (ms: number, ...signals: (AbortSignal | undefined)[]): Promise<void> =>
  delay(Math.max(0, ms), undefined, {
    signal: AbortSignal.any(signals.filter((s) => s !== undefined)),
  }).catch(() => {});
