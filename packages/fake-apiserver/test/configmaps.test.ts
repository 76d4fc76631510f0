import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, type Harness, startHarness } from './helpers.js';

const CMS = '/api/v1/namespaces/default/configmaps';
const DATA = { 'data-1': 'value-1', 'data-2': 'value-2', 'data-3': 'value-3' };

// The API behaviour upstream's configmap.go and configmap_volume.go cases rely on, with
// kube-apiserver's ValidateConfigMap and ValidateConfigMapUpdate answers.
describe('v1 ConfigMap', () => {
  let h: Harness;
  let api: ApiClient;

  beforeAll(async () => {
    h = await startHarness({ scheduler: false });
    api = h.api;
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('refuses keys that are not config keys, naming each', async () => {
    const res = await api.post(CMS, {
      metadata: { name: 'bad-keys' },
      data: { '': 'value-1', '..x': 'v', shared: 'v' },
      binaryData: { shared: 'AQ==', 'a b': 'AQ==' },
    });
    expect(res.status).toBe(422);
    expect(res.body.reason).toBe('Invalid');
    const causes = res.body.details.causes.map((c: { field: string; message: string }) => [
      c.field,
      c.message,
    ]);
    expect(causes).toEqual(
      expect.arrayContaining([
        [
          'data[]',
          `Invalid value: "": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
        ],
        ['data[..x]', `Invalid value: "..x": must not start with '..'`],
        ['data[shared]', 'Invalid value: "shared": duplicate of key present in binaryData'],
        ['binaryData[a b]', expect.stringContaining('a valid config key must consist of')],
      ]),
    );
    for (const key of ['.', '..']) {
      const dot = await api.post(CMS, { metadata: { name: 'dot' }, data: { [key]: 'v' } });
      expect(dot.body.message).toBe(
        `ConfigMap "dot" is invalid: data[${key}]: Invalid value: "${key}": must not be '${key}'`,
      );
    }
  });

  it('updates without a resourceVersion, as upstream forces an update', async () => {
    await api.post(CMS, { metadata: { name: 'upd' }, data: DATA });
    const put = await api.put(`${CMS}/upd`, { metadata: { name: 'upd' }, data: { data: 'value' } });
    expect(put.status).toBe(200);
    expect((await api.get(`${CMS}/upd`)).body.data).toEqual({ data: 'value' });
  });

  it('keeps data, binaryData and immutable once immutable, while labels change and delete works', async () => {
    let cm = (await api.post(CMS, { metadata: { name: 'immutable' }, data: DATA })).body;
    cm = (await api.put(`${CMS}/immutable`, { ...cm, data: { ...cm.data, 'data-4': 'value-4' } })).body;
    const marked = await api.put(`${CMS}/immutable`, { ...cm, immutable: true });
    expect(marked.status).toBe(200);
    cm = marked.body;

    const changed = await api.put(`${CMS}/immutable`, { ...cm, data: { ...cm.data, 'data-5': 'value-5' } });
    expect(changed.status).toBe(422);
    expect(changed.body).toMatchObject({
      reason: 'Invalid',
      message:
        'ConfigMap "immutable" is invalid: data: Forbidden: field is immutable when `immutable` is set',
    });
    const binary = await api.put(`${CMS}/immutable`, { ...cm, binaryData: { b: 'AQ==' } });
    expect(binary.body.message).toMatch(/binaryData: Forbidden: field is immutable when `immutable` is set/);

    for (const immutable of [false, undefined]) {
      const mutable = await api.put(`${CMS}/immutable`, { ...cm, immutable });
      expect(mutable.status).toBe(422);
      expect(mutable.body.message).toBe(
        'ConfigMap "immutable" is invalid: immutable: Forbidden: field is immutable when `immutable` is set',
      );
    }
    expect((await api.get(`${CMS}/immutable`)).body.immutable).toBe(true);

    const labelled = await api.put(`${CMS}/immutable`, {
      ...cm,
      metadata: { ...cm.metadata, labels: { label1: 'value1' } },
    });
    expect(labelled.status).toBe(200);
    expect((await api.delete(`${CMS}/immutable`)).status).toBe(200);
  });

  it("runs through upstream's lifecycle: strategic merge patch, list across namespaces, delete collection", async () => {
    await api.post(CMS, {
      metadata: { name: 'test-configmap', labels: { 'test-configmap-static': 'true' } },
      data: { valueName: 'value' },
    });
    const patched = await api.patch(`${CMS}/test-configmap`, 'strategic', {
      metadata: { labels: { 'test-configmap': 'patched' } },
      data: { valueName: 'value1' },
    });
    expect(patched.status).toBe(200);
    const all = await api.get('/api/v1/configmaps?labelSelector=test-configmap%3Dpatched');
    expect(all.body.items).toEqual([
      expect.objectContaining({
        metadata: expect.objectContaining({
          name: 'test-configmap',
          namespace: 'default',
          labels: { 'test-configmap-static': 'true', 'test-configmap': 'patched' },
        }),
        data: { valueName: 'value1' },
      }),
    ]);
    const gone = await api.delete(`${CMS}?labelSelector=test-configmap-static%3Dtrue`);
    expect(gone.status).toBe(200);
    expect((await api.get(`${CMS}?labelSelector=test-configmap-static%3Dtrue`)).body.items).toEqual([]);
  });
});
