// The allocation manager's checkpoint writes: coalesced (one in flight, then the newest state),
// crash-safe (a temporary file renamed over the checkpoint), flushed on stop, failures logged and
// written again.
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PredicateAdmitHandler } from '../src/admission/predicate.js';
import { ALLOCATED_PODS_STATE, AllocationManager } from '../src/allocation/allocation_manager.js';
import { type CheckpointFs, CheckpointWriter } from '../src/allocation/checkpoint_writer.js';

/** The host's file operations, with each temporary file's content recorded and writes held on demand. */
function recordingFs() {
  const writes: string[] = [];
  let held: (() => void)[] | undefined;
  const fs: CheckpointFs = {
    mkdir,
    rename,
    writeFile: async (path, data) => {
      writes.push(data);
      if (held) await new Promise<void>((resolve) => held?.push(resolve));
      await writeFile(path, data);
    },
  };
  return {
    fs,
    writes,
    hold: () => {
      held = [];
    },
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const r of waiting) r();
    },
  };
}

/** Until the condition holds, a turn of the event loop at a time. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setImmediate(r));
}

describe('CheckpointWriter', () => {
  it('writes once while a write is in flight, then the newest state, through a renamed temporary file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-ckpt-'));
    const path = join(dir, 'sub', 'state');
    const rec = recordingFs();
    let state = 0;
    const w = new CheckpointWriter({
      path,
      serialize: () => String(state),
      onError: () => undefined,
      fs: rec.fs,
    });
    rec.hold();
    state = 1;
    w.changed();
    await until(() => rec.writes.length === 1);
    for (let i = 2; i <= 30; i++) {
      state = i;
      w.changed();
    }
    rec.release();
    await w.flush();
    // The first write, and one for the 29 changes made while it was in flight.
    expect(rec.writes).toEqual(['1', '30']);
    expect(readFileSync(path, 'utf8')).toBe('30');
    expect(readdirSync(join(dir, 'sub'))).toEqual(['state']);
  });

  it('logs a failed write, keeps going, and writes the whole state again on flush', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-ckpt-'));
    const path = join(dir, 'state');
    const errors: Error[] = [];
    let fail = true;
    const fs: CheckpointFs = {
      mkdir,
      rename,
      writeFile: async (p, data) => {
        if (fail) throw new Error('ENOSPC: no space left on device');
        await writeFile(p, data);
      },
    };
    let state = 'a';
    const w = new CheckpointWriter({ path, serialize: () => state, onError: (e) => errors.push(e), fs });
    w.changed();
    await expect(w.flush()).rejects.toThrow('ENOSPC');
    expect(errors.map((e) => e.message)).toEqual([
      'ENOSPC: no space left on device',
      'ENOSPC: no space left on device',
    ]);
    fail = false;
    state = 'b';
    await w.flush();
    expect(readFileSync(path, 'utf8')).toBe('b');
  });
});

describe('AllocationManager checkpoints', () => {
  const node: V1Node = { metadata: { name: 'n' }, status: { allocatable: { cpu: '4', memory: '4Gi' } } };
  const pod = (uid: string): V1Pod => ({
    metadata: { uid, name: uid, namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'busybox', resources: { requests: { cpu: '10m' } } }] },
  });

  it('admits a burst with two writes, and the stop flush leaves every pod on disk for the next agent', async () => {
    const root = mkdtempSync(join(tmpdir(), 'kh-alloc-'));
    const rec = recordingFs();
    const options = {
      rootDir: root,
      node: () => node,
      activePods: () => [],
      admit: new PredicateAdmitHandler(() => node),
    };
    const m = new AllocationManager({ ...options, fs: rec.fs });
    const stop = new AbortController();
    const running = m.run(stop.signal);
    rec.hold();
    m.addPod(pod('p0'));
    await until(() => rec.writes.length === 1);
    for (let i = 1; i < 30; i++) m.addPod(pod(`p${i}`));
    rec.release();
    stop.abort();
    await running;
    expect(rec.writes).toHaveLength(2);
    const onDisk = JSON.parse(readFileSync(join(root, ALLOCATED_PODS_STATE), 'utf8'));
    expect(Object.keys(onDisk.podResources)).toHaveLength(30);
    expect(new AllocationManager(options).getContainerResourceAllocation('p29', 'c')).toEqual({
      requests: { cpu: '10m' },
    });
  });

  it('logs a checkpoint it cannot write, and still stops', async () => {
    const errors: string[] = [];
    const log = { info: () => undefined, v: () => undefined, error: (msg: string) => void errors.push(msg) };
    const fs: CheckpointFs = {
      mkdir,
      rename,
      writeFile: async () => {
        throw new Error('EROFS: read-only file system');
      },
    };
    const m = new AllocationManager({
      rootDir: mkdtempSync(join(tmpdir(), 'kh-alloc-')),
      node: () => node,
      activePods: () => [],
      admit: new PredicateAdmitHandler(() => node),
      log,
      fs,
    });
    m.addPod(pod('p0'));
    // The allocation stands in memory, as the kubelet's does when its checkpoint fails.
    expect(m.getContainerResourceAllocation('p0', 'c')).toEqual({ requests: { cpu: '10m' } });
    await expect(m.flush()).rejects.toThrow('EROFS');
    const stop = new AbortController();
    stop.abort();
    await m.run(stop.signal);
    expect(errors.length).toBeGreaterThan(0);
    expect(new Set(errors)).toEqual(new Set(['Failed to write the checkpoint']));
  });
});
