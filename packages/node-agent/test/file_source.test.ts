import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { describe, expect, it } from 'vitest';
import {
  FileStaticPodSource,
  ManifestEvents,
  RECREATE_WINDOW_MS,
  staticPodFromManifest,
} from '../src/podconfig/file_source.js';
import type { PodUpdate } from '../src/types/pod_update.js';

/** File reads run on real I/O, which FakeClock.advance does not wait for. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}

const manifest = (name: string, image = 'busybox') => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  namespace: kube-system
spec:
  containers:
  - name: main
    image: ${image}
`;

describe('staticPodFromManifest', () => {
  it('names, binds and annotates the pod like the kubelet, with a stable UID', () => {
    const p = staticPodFromManifest(manifest('etcd'), '/etc/kubernetes/manifests/etcd.yaml', 'Node-A');
    expect(p.metadata).toMatchObject({
      name: 'etcd-node-a',
      namespace: 'kube-system',
      annotations: { 'kubernetes.io/config.source': 'file', 'kubernetes.io/config.hash': p.metadata?.uid },
    });
    expect(p.metadata?.uid).toMatch(/^[0-9a-f]{32}$/);
    expect(p.spec?.nodeName).toBe('Node-A');
    expect(p.spec?.tolerations).toEqual([{ operator: 'Exists', effect: 'NoExecute' }]);
    expect(
      staticPodFromManifest(manifest('etcd'), '/etc/kubernetes/manifests/etcd.yaml', 'Node-A').metadata?.uid,
    ).toBe(p.metadata?.uid);
    expect(
      staticPodFromManifest(manifest('etcd', 'etcd:2'), '/etc/kubernetes/manifests/etcd.yaml', 'Node-A')
        .metadata?.uid,
    ).not.toBe(p.metadata?.uid);
  });

  it.each([
    ['kind: Service\napiVersion: v1\nmetadata: {name: x}\n', /kind must be Pod/],
    ['apiVersion: v1\nkind: Pod\nspec: {containers: [{name: a, image: b}]}\n', /metadata.name/],
    [
      'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: []}\n',
      /containers must not be empty/,
    ],
    [
      'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: a}]}\n',
      /needs a name and an image/,
    ],
    ['', /not a Pod manifest/],
  ])('rejects %j', (text, why) => {
    expect(() => staticPodFromManifest(text, '/m/x.yaml', 'n')).toThrow(why);
  });
});

describe('ManifestEvents', () => {
  const a = new Set(['a.yaml']);
  const none = new Set<string>();

  it('sees a delete and a create whose events straddle two passes as one recreation', () => {
    // The pass read a.yaml, then the delete's event came before it ended, the create's after.
    const events = new ManifestEvents();
    events.record('a.yaml', 1_000);
    expect(events.recreated(a, a, 1_010)).toEqual(new Set());
    events.record('a.yaml', 1_020);
    expect(events.recreated(a, a, 1_030)).toEqual(new Set(['a.yaml']));
    // Settled: the next replacing rename alone is no removal.
    events.record('a.yaml', 2_000);
    expect(events.recreated(a, a, 2_010)).toEqual(new Set());
  });

  it('pairs no events further apart than the window, and forgets names a pass added or removed', () => {
    const events = new ManifestEvents();
    events.record('a.yaml', 0);
    expect(events.recreated(a, a, 10)).toEqual(new Set());
    events.record('a.yaml', RECREATE_WINDOW_MS + 1);
    expect(events.recreated(a, a, RECREATE_WINDOW_MS + 1)).toEqual(new Set());
    // Seen absent by a pass: the snapshot diff removed it, so its events are spent.
    events.record('a.yaml', 10_000);
    expect(events.recreated(a, none, 10_000)).toEqual(new Set());
    events.record('a.yaml', 10_001);
    expect(events.recreated(none, a, 10_001)).toEqual(new Set());
    events.record('a.yaml', 10_002);
    expect(events.recreated(a, a, 10_002)).toEqual(new Set());
  });
});

describe('FileStaticPodSource', () => {
  it('delivers ADD, UPDATE and REMOVE as files change, skipping invalid ones', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-static-'));
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    writeFileSync(
      join(dir, 'b.json'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'b' },
        spec: { containers: [{ name: 'c', image: 'x' }] },
      }),
    );
    writeFileSync(join(dir, 'broken.yaml'), 'kind: [');
    writeFileSync(join(dir, '.hidden.yaml'), manifest('hidden'));
    const clock = new FakeClock();
    const errors: string[] = [];
    const source = new FileStaticPodSource({
      path: dir,
      nodeName: 'node-a',
      clock,
      periodMs: 20_000,
      log: { info() {}, v() {}, error: (msg) => errors.push(msg) },
    });
    const got: string[] = [];
    const abort = new AbortController();
    const running = source.run(abort.signal, (u: PodUpdate) =>
      got.push(`${u.op} ${u.pods.map((p) => p.metadata?.name).join(',')}`),
    );
    await until(() => got.length === 1);
    expect(source.ready()).toBe(true);
    expect(got).toEqual(['ADD a-node-a,b-node-a']);
    expect(errors).toEqual(['Skipping invalid static pod manifest']);

    // A changed manifest is a new UID (the content hash), so the kubelet sees a replacement. The
    // directory watch delivers it at once, with no poll (the clock stands still). Replaced by
    // rename, so that no pass reads a half-written file.
    writeFileSync(join(dir, '.a.tmp'), manifest('a', 'busybox:2'));
    renameSync(join(dir, '.a.tmp'), join(dir, 'a.yaml'));
    await until(() => got.length === 3);
    expect(got.slice(1)).toEqual(['REMOVE a-node-a', 'ADD a-node-a']);
    rmSync(join(dir, 'b.json'));
    await until(() => got.length === 4);
    expect(got[3]).toBe('REMOVE b-node-a');
    const reads = errors.length;
    await clock.advance(20_000);
    await until(() => errors.length > reads); // the periodic pass still runs (it logs the broken file again)
    expect(got).toHaveLength(4);
    abort.abort();
    await running;
  });

  it('lists a directory created after it started at the next poll, then watches it', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'kh-static-')), 'manifests');
    const clock = new FakeClock();
    const errors: string[] = [];
    const log = { info() {}, v() {}, error: (msg: string) => errors.push(msg) };
    const source = new FileStaticPodSource({ path: dir, nodeName: 'n', clock, periodMs: 20_000, log });
    const got: string[] = [];
    const abort = new AbortController();
    const running = source.run(abort.signal, (u) =>
      got.push(`${u.op} ${u.pods.map((p) => p.metadata?.name).join(',')}`),
    );
    await until(() => errors.includes('Unable to read static pod directory'));
    expect(source.ready()).toBe(false);
    mkdirSync(dir);
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    // Nothing watches a directory that did not exist: the poll finds it.
    await new Promise((r) => setTimeout(r, 100));
    expect(got).toEqual([]);
    await clock.advance(20_000);
    await until(() => got.length === 1);
    expect(got).toEqual(['ADD a-n']);
    writeFileSync(join(dir, '.b.tmp'), manifest('b'));
    renameSync(join(dir, '.b.tmp'), join(dir, 'b.yaml'));
    await until(() => got.length === 2);
    expect(got[1]).toBe('ADD b-n');
    abort.abort();
    await running;
  });

  it('sees a manifest removed and written again before its next pass as a REMOVE, then an ADD of the same pod', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-static-'));
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    const clock = new FakeClock();
    const source = new FileStaticPodSource({ path: dir, nodeName: 'n', clock, periodMs: 20_000 });
    const got: string[] = [];
    const abort = new AbortController();
    const running = source.run(abort.signal, (u) =>
      got.push(`${u.op} ${u.pods.map((p) => p.metadata?.uid).join(',')}`),
    );
    await until(() => got.length === 1);
    const uid = got[0]?.split(' ')[1];
    // As upstream's case does it: delete, then create, with nothing in between.
    writeFileSync(join(dir, '.a.tmp'), manifest('a'));
    rmSync(join(dir, 'a.yaml'));
    renameSync(join(dir, '.a.tmp'), join(dir, 'a.yaml'));
    await until(() => got.length === 3);
    expect(got).toEqual([`ADD ${uid}`, `REMOVE ${uid}`, `ADD ${uid}`]);
    // A rename over the file (one event on its name) is no removal: the same content changes nothing.
    writeFileSync(join(dir, '.a.tmp'), manifest('a'));
    renameSync(join(dir, '.a.tmp'), join(dir, 'a.yaml'));
    await new Promise((r) => setTimeout(r, 200));
    expect(got).toHaveLength(3);
    abort.abort();
    await running;
  });

  it('keeps its pods when the directory becomes unreadable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-static-'));
    writeFileSync(join(dir, 'a.yaml'), manifest('a'));
    const clock = new FakeClock();
    const errors: string[] = [];
    const log = { info() {}, v() {}, error: (msg: string) => errors.push(msg) };
    const source = new FileStaticPodSource({ path: dir, nodeName: 'n', clock, periodMs: 1_000, log });
    const got: string[] = [];
    const abort = new AbortController();
    const running = source.run(abort.signal, (u) => got.push(u.op));
    await until(() => got.length === 1);
    rmSync(dir, { recursive: true });
    await clock.advance(1_000);
    await until(() => errors.includes('Unable to read static pod directory'));
    expect(got).toEqual(['ADD']);
    abort.abort();
    await running;
  });
});
