import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../src/storage/store.js';
import { WatchCache } from '../src/storage/watch-cache.js';
import { eventually } from './helpers.js';

const cm = (name: string, v: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'ns' },
  data: { v },
});

describe('Store', () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), 'kh-store-'));
    dirs.push(d);
    return d;
  };
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('assigns monotonic resourceVersions and indexes pods by node', () => {
    const s = new Store();
    const a = s.write('configmaps', 'ADDED', cm('a', '1'));
    const b = s.write('configmaps', 'ADDED', cm('b', '1'));
    expect(Number(b.metadata.resourceVersion)).toBe(Number(a.metadata.resourceVersion) + 1);
    s.write('pods', 'ADDED', { metadata: { name: 'p', namespace: 'ns' }, spec: { nodeName: 'n1' } });
    expect(s.podsOnNode('n1').map((p) => p.metadata.name)).toEqual(['p']);
    s.write('pods', 'MODIFIED', { metadata: { name: 'p', namespace: 'ns' }, spec: { nodeName: 'n2' } });
    expect(s.podsOnNode('n1')).toEqual([]);
    s.delete('pods', 'ns', 'p');
    expect(s.podsOnNode('n2')).toEqual([]);
  });

  it('replays snapshot plus log tail, and ignores a torn last line', async () => {
    const dir = tmp();
    const s1 = new Store({ dataDir: dir, snapshotBytes: 2000 });
    for (let i = 0; i < 100; i++) {
      s1.write('configmaps', 'ADDED', cm(`c${i}`, String(i)));
      await s1.sync();
    }
    s1.delete('configmaps', 'ns', 'c5');
    await s1.sync();
    // Background snapshots ran: a snapshot file exists and the old log segment was folded in.
    await eventually(() => expect(existsSync(join(dir, 'wal.prev.jsonl'))).toBe(false));
    expect(existsSync(join(dir, 'snapshot.jsonl'))).toBe(true);
    expect(readFileSync(join(dir, 'wal.jsonl'), 'utf8').length).toBeGreaterThan(0);
    const rv = s1.resourceVersion;
    // Simulated crash mid-append: half a record that was never acknowledged. No close().
    appendFileSync(
      join(dir, 'wal.jsonl'),
      '{"rv":99999,"op":"put","r":"configmaps","ns":"ns","name":"torn","o":{"met',
    );
    const s2 = new Store({ dataDir: dir });
    expect(s2.resourceVersion).toBe(rv);
    expect(s2.count('configmaps')).toBe(99);
    expect(s2.get('configmaps', 'ns', 'c99')?.data).toEqual({ v: '99' });
    expect(s2.get('configmaps', 'ns', 'torn')).toBeUndefined();
  });

  it('a snapshot yields the disk after each synced slice, and commits go on while it waits', async () => {
    const dir = tmp();
    const paused: number[] = [];
    let release = () => {};
    const s = new Store({
      dataDir: dir,
      snapshotBytes: 64 * 1024,
      snapshotPace: (syncMs) => {
        paused.push(syncMs);
        // The first pause holds the snapshot until the test lets it go; the others pass at once.
        if (paused.length > 1) return Promise.resolve();
        return new Promise((resolve) => {
          release = resolve;
        });
      },
    });
    // About 2.5 MiB of state: a snapshot of it syncs after each MiB (SNAPSHOT_SYNC_BYTES).
    const big = 'x'.repeat(2048);
    for (let i = 0; i < 1200; i++) s.write('configmaps', 'ADDED', cm(`c${i}`, big));
    await s.sync();
    await eventually(() => expect(paused.length).toBe(1));
    expect(paused[0]).toBeGreaterThanOrEqual(0);
    // The snapshot is waiting: not renamed into place, and a write is still acknowledged.
    expect(existsSync(join(dir, 'snapshot.jsonl.tmp'))).toBe(true);
    expect(existsSync(join(dir, 'snapshot.jsonl'))).toBe(false);
    s.write('configmaps', 'ADDED', cm('during', '1'));
    await s.sync();
    release();
    await eventually(() => expect(existsSync(join(dir, 'wal.prev.jsonl'))).toBe(false));
    expect(paused.length).toBeGreaterThanOrEqual(2);
    const again = new Store({ dataDir: dir });
    expect(again.count('configmaps')).toBe(1201);
    expect(again.get('configmaps', 'ns', 'during')?.data).toEqual({ v: '1' });
  });

  it("snapshots again only once the log has grown by the last snapshot's size", async () => {
    const dir = tmp();
    const s = new Store({ dataDir: dir, snapshotBytes: 1024, snapshotPace: () => Promise.resolve() });
    const value = 'x'.repeat(400);
    for (let i = 0; i < 100; i++) s.write('configmaps', 'ADDED', cm(`c${i}`, value));
    await s.sync();
    await eventually(() => expect(existsSync(join(dir, 'wal.prev.jsonl'))).toBe(false));
    const snapshotSize = statSync(join(dir, 'snapshot.jsonl')).size;
    expect(snapshotSize).toBeGreaterThan(40_000);
    // Far past snapshotBytes, short of the snapshot's size: the log keeps growing.
    for (let i = 0; i < 50; i++) {
      s.write('configmaps', 'MODIFIED', cm(`c${i}`, value));
      await s.sync();
    }
    const logged = statSync(join(dir, 'wal.jsonl')).size;
    expect(logged).toBeGreaterThan(10 * 1024);
    expect(logged).toBeLessThan(snapshotSize);
    // Past it: the log is rotated into the next snapshot.
    for (let i = 50; i < 100; i++) {
      s.write('configmaps', 'MODIFIED', cm(`c${i}`, value));
      await s.sync();
    }
    s.write('configmaps', 'MODIFIED', cm('c0', 'last'));
    await s.sync();
    await eventually(() => expect(existsSync(join(dir, 'wal.prev.jsonl'))).toBe(false));
    expect(statSync(join(dir, 'wal.jsonl')).size).toBeLessThan(logged);
  });

  it('recovers from a crash in the middle of a snapshot (rotated segment still present)', async () => {
    const dir = tmp();
    const s1 = new Store({ dataDir: dir });
    for (let i = 0; i < 10; i++) s1.write('configmaps', 'ADDED', cm(`c${i}`, String(i)));
    await s1.sync();
    // The state after rotation, before the new snapshot was renamed into place.
    renameSync(join(dir, 'wal.jsonl'), join(dir, 'wal.prev.jsonl'));
    writeFileSync(join(dir, 'wal.jsonl'), '');
    const s2 = new Store({ dataDir: dir });
    expect(s2.count('configmaps')).toBe(10);
    s2.write('configmaps', 'ADDED', cm('after', 'x'));
    await s2.sync();
    // The interrupted snapshot was completed at startup.
    expect(existsSync(join(dir, 'wal.prev.jsonl'))).toBe(false);
    const s3 = new Store({ dataDir: dir });
    expect(s3.count('configmaps')).toBe(11);
    expect(s3.resourceVersion).toBe(s2.resourceVersion);
  });

  it('fails stop when the log cannot be written: the write is not acknowledged, later ones are refused', async () => {
    const dir = tmp();
    // Every write to /dev/full fails with ENOSPC, like a full disk.
    symlinkSync('/dev/full', join(dir, 'wal.jsonl'));
    const s = new Store({ dataDir: dir });
    s.write('configmaps', 'ADDED', cm('lost', '1'));
    await expect(s.sync()).rejects.toThrow(/write-ahead log failed.*ENOSPC/);
    expect(() => s.write('configmaps', 'ADDED', cm('next', '1'))).toThrow(/write-ahead log failed/);
  });

  it('delivers watch events only after the write is durable', async () => {
    const s = new Store({ dataDir: tmp() });
    const seen: string[] = [];
    s.subscribe('configmaps', (ev) => seen.push(`${ev.type} ${ev.object.metadata.name}`));
    s.write('configmaps', 'ADDED', cm('x', '1'));
    expect(seen).toEqual([]);
    await s.sync();
    expect(seen).toEqual(['ADDED x']);
    s.close();
  });
});

describe('WatchCache', () => {
  const ev = (rv: number) => ({ type: 'ADDED' as const, resource: 'r', rv, object: {}, at: 0 });
  it('serves events after a resourceVersion and expires evicted history', () => {
    const c = new WatchCache(3, 0);
    for (let rv = 1; rv <= 5; rv++) c.push(ev(rv));
    expect(c.since(3)!.map((e) => e.rv)).toEqual([4, 5]);
    expect(c.since(2)!.map((e) => e.rv)).toEqual([3, 4, 5]);
    expect(c.since(1)).toBeUndefined();
    expect(c.since(5)).toEqual([]);
  });
});
