import type { DockerClient, DockerEvent } from '../docker/client.js';
import { eventTimeNanos } from '../docker/stream.js';
import { LabelKeys } from '../model/labels.js';
import { DockerEventFeed } from './event_feed.js';

/**
 * How long after an exit by SIGKILL (or after its `die` event reached the shim, when that is later)
 * ContainerStatus waits for an `oom` event that may still follow it. dockerd handles containerd's
 * OOM event after its exit handling, which a loaded 2-core machine can stretch for seconds: 1 s
 * and then 3 s proved short (CI runs' in-node conformance on Docker 26 reported `Error`). Only an
 * exit by a SIGKILL that Docker did not send waits, and an `oom` event ends the wait at once, so the
 * bound costs ordinary exits and real OOM kills nothing.
 */
export const LATE_OOM_WAIT_MS = 10_000;
const MAX_ENTRIES = 50_000;
const SIGKILL = '9';

interface Entry {
  /** Docker's time (ns) of the container's last `oom` event. */
  oomAt?: bigint;
  /** Docker's time (ns) of the last SIGKILL Docker itself sent it (`kill` event: stop, kill, rm -f). */
  killedAt?: bigint;
  /** Docker's time (ns) of its last `die` event, and when (this process's clock, ms) that arrived. */
  died?: { at: bigint; heardAt: number };
}

/**
 * What Docker's `oom`, `kill` and `die` events say about how the shim's containers ended. Docker marks
 * `State.OOMKilled` only when it handles the cgroup's OOM notification, which containerd's shim
 * publishes apart from the task's exit, so it can come after the exit: dockerd then reports the
 * container exited (137) first and OOMKilled a moment later (Docker 24 and later), or never (20.10
 * keeps the flag the exit carried and only emits the `oom` event). The events tell both cases apart.
 *
 * A missed event (while the stream is down) leaves an entry incomplete, never wrong: what was
 * recorded stays true, so a new subscription forgets nothing. Entries leave on `destroy`; the oldest
 * make room beyond MAX_ENTRIES.
 */
export class OomEvents {
  private readonly entries = new Map<string, Entry>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly feed: DockerEventFeed;
  private closed = false;

  constructor(docker: DockerClient) {
    this.feed = new DockerEventFeed(
      docker,
      { type: ['container'], event: ['oom', 'kill', 'die', 'destroy'], label: [LabelKeys.containerType] },
      (event, raw) => this.record(event, raw),
      () => undefined,
    );
  }

  /** Subscribes to the events; resolves once the subscription is live (or has failed). */
  start(): Promise<void> {
    return this.feed.start();
  }

  private record(event: DockerEvent, raw: string): void {
    const id = event.Actor?.ID;
    if (!id) return;
    if (event.Action === 'destroy') {
      this.entries.delete(id);
    } else {
      const at = eventTimeNanos(raw, event.time);
      const entry = this.entries.get(id) ?? this.add(id);
      if (event.Action === 'oom') entry.oomAt = at;
      else if (event.Action === 'die') entry.died = { at, heardAt: Date.now() };
      else if (event.Action === 'kill' && event.Actor?.Attributes?.signal === SIGKILL) entry.killedAt = at;
    }
    const waiting = this.waiters.get(id);
    this.waiters.delete(id);
    for (const wake of waiting ?? []) wake();
  }

  private add(id: string): Entry {
    if (this.entries.size >= MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    const entry: Entry = {};
    this.entries.set(id, entry);
    return entry;
  }

  /** Whether Docker reported an OOM kill in the container since it started (`startedAt`, ns). */
  seen(id: string, startedAt: bigint): boolean {
    const oomAt = this.entries.get(id)?.oomAt;
    return oomAt !== undefined && oomAt >= startedAt;
  }

  /**
   * For a container that exited by SIGKILL (137, at `finishedAtMs`) without Docker's OOMKilled: true
   * as soon as an `oom` event of this run is heard; false at once when Docker itself sent the SIGKILL
   * (a stop or kill: its `kill` event precedes the exit) or while the stream is down; else false once
   * LATE_OOM_WAIT_MS have passed since the exit, or since its `die` event arrived if that was later.
   */
  async lateOom(id: string, startedAt: bigint, finishedAtMs: number): Promise<boolean> {
    // Docker's clock may run ahead of ours (a remote Engine): never wait from a time still to come.
    const exitedAt = Math.min(finishedAtMs, Date.now());
    for (;;) {
      if (this.seen(id, startedAt)) return true;
      const entry = this.entries.get(id);
      if (this.closed || !this.feed.live || (entry?.killedAt ?? -1n) >= startedAt) return false;
      const died = entry?.died && entry.died.at >= startedAt ? entry.died.heardAt : 0;
      const left = Math.max(exitedAt, died) + LATE_OOM_WAIT_MS - Date.now();
      if (left <= 0) return false;
      await this.nextEvent(id, left);
    }
  }

  /** Resolves on the container's next event, after `ms`, or at close(), whichever comes first. */
  private nextEvent(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        const waiting = this.waiters.get(id);
        waiting?.delete(wake);
        if (waiting?.size === 0) this.waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      const waiting = this.waiters.get(id) ?? new Set();
      waiting.add(wake);
      this.waiters.set(id, waiting);
    });
  }

  close(): void {
    this.closed = true;
    this.feed.close();
    for (const waiting of this.waiters.values()) for (const wake of waiting) wake();
    this.waiters.clear();
    this.entries.clear();
  }
}
