import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, type Harness, startHarness } from './helpers.js';

// Secrets as kube-apiserver keeps them, the way upstream's secrets.go and secrets_volume.go API
// cases drive them: an empty key refused, patch and delete by label, and `immutable`.
const SECRETS = '/api/v1/namespaces/default/secrets';
const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('secrets', () => {
  let h: Harness;
  let api: ApiClient;

  beforeAll(async () => {
    h = await startHarness({ scheduler: false });
    api = h.api;
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('refuses an empty key as Invalid', async () => {
    const res = await api.post(SECRETS, { metadata: { name: 'empty-key' }, data: { '': b64('value-1\n') } });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Invalid' });
  });

  it("refuses the keys a volume's atomic writer owns: '.', '..' and a '..' prefix (IsConfigMapKey)", async () => {
    for (const key of ['.', '..', '..data']) {
      const res = await api.post(SECRETS, { metadata: { name: 'dot-key' }, data: { [key]: b64('v') } });
      expect(res.status, key).toBe(422);
      expect(JSON.stringify(res.body.details?.causes), key).toContain(`data[${key}]`);
    }
    expect(
      (await api.post(SECRETS, { metadata: { name: 'dot-key' }, data: { '.dot': b64('v') } })).status,
    ).toBe(201);
  });

  it('patches a secret, lists it in all namespaces and deletes it by its new label', async () => {
    const created = await api.post(SECRETS, {
      metadata: { name: 'patched', labels: { 'testsecret-constant': 'true' } },
      data: { key: b64('value') },
    });
    expect(created.status).toBe(201);
    const listed = async () =>
      (await api.get('/api/v1/secrets?labelSelector=testsecret-constant%3Dtrue')).body.items.map(
        (s: { metadata: { name: string } }) => s.metadata.name,
      );
    expect(await listed()).toContain('patched');
    const patched = await api.patch(`${SECRETS}/patched`, 'strategic', {
      metadata: { labels: { testsecret: 'true' } },
      data: { key: b64('value1') },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.metadata.labels).toEqual({ 'testsecret-constant': 'true', testsecret: 'true' });
    expect(Number(patched.body.metadata.resourceVersion)).toBeGreaterThan(
      Number(created.body.metadata.resourceVersion),
    );
    expect((await api.delete(`${SECRETS}?labelSelector=testsecret%3Dtrue`)).status).toBe(200);
    expect(await listed()).not.toContain('patched');
  });

  it('keeps an immutable secret: neither its data nor the mark change, its labels do', async () => {
    const data = { 'data-1': b64('value-1\n') };
    let current = (await api.post(SECRETS, { metadata: { name: 'immutable' }, data })).body;
    const put = (body: unknown) => api.put(`${SECRETS}/immutable`, body);
    // Mutable, its data changes; then it is marked immutable.
    current = (await put({ ...current, data: { ...data, 'data-4': b64('value-4\n') } })).body;
    const marked = await put({ ...current, immutable: true });
    expect(marked.status).toBe(200);
    current = marked.body;

    const changedData = await put({ ...current, data: { ...current.data, 'data-5': b64('value-5\n') } });
    expect(changedData.status).toBe(422);
    expect(changedData.body.message).toContain('data: Forbidden: field is immutable when `immutable` is set');
    const unmarked = await put({ ...current, immutable: false });
    expect(unmarked.status).toBe(422);
    expect(unmarked.body.message).toContain(
      'immutable: Forbidden: field is immutable when `immutable` is set',
    );
    // stringData is folded into data before validation, so it cannot change the data either.
    expect((await put({ ...current, stringData: { 'data-1': 'other' } })).status).toBe(422);

    const relabelled = await put({
      ...current,
      metadata: { ...current.metadata, labels: { label1: 'value1' } },
    });
    expect(relabelled.status).toBe(200);
    expect(relabelled.body.immutable).toBe(true);
    expect((await api.delete(`${SECRETS}/immutable`)).status).toBe(200);
  });
});
