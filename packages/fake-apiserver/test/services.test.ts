// core/v1 Services: a ClusterIP from 10.96.0.0/12 (never the network address nor the first
// host, `kubernetes`'s), defaults, ValidateService's ports and type rules, the address immutable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, KUBECTL, kubectl, startHarness } from './helpers.js';

const svc = (name: string, spec: object) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec });

describe('services', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ scheduler: false });
  });
  afterAll(async () => h?.stop());

  it('allocates a ClusterIP in the service range and fills the defaults', async () => {
    const res = await h.api.post(
      '/api/v1/namespaces/default/services',
      svc('fooservice', { ports: [{ port: 8765, targetPort: 8080 }], selector: { name: 'srv' } }),
    );
    expect(res.status).toBe(201);
    const spec = res.body.spec;
    expect(spec).toMatchObject({
      type: 'ClusterIP',
      sessionAffinity: 'None',
      ports: [{ port: 8765, targetPort: 8080, protocol: 'TCP' }],
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack',
    });
    const [a, b, c, d] = spec.clusterIP.split('.').map(Number);
    expect(a).toBe(10);
    expect(b & 0xf0).toBe(96);
    expect(`${a}.${b}.${c}.${d}`).not.toMatch(/^10\.96\.0\.[01]$/);
    expect(spec.clusterIPs).toEqual([spec.clusterIP]);
    const got = await h.api.get('/api/v1/namespaces/default/services/fooservice');
    expect(got.body.spec.clusterIP).toBe(spec.clusterIP);
  });

  it('refuses a taken or out-of-range address, a changed one, missing ports and unknown types', async () => {
    const first = await h.api.post(
      '/api/v1/namespaces/default/services',
      svc('a', { ports: [{ port: 80 }] }),
    );
    const ip = first.body.spec.clusterIP;
    expect(first.body.spec.ports[0].targetPort).toBe(80);
    const taken = await h.api.post(
      '/api/v1/namespaces/default/services',
      svc('b', { clusterIP: ip, ports: [{ port: 80 }] }),
    );
    expect(taken.status).toBe(422);
    expect(taken.body.message).toContain('provided IP is already allocated');
    const outside = await h.api.post(
      '/api/v1/namespaces/default/services',
      svc('c', { clusterIP: '192.168.1.1', ports: [{ port: 80 }] }),
    );
    expect(outside.status).toBe(422);
    expect(outside.body.message).toContain('provided IP is not in the valid range');
    const noPorts = await h.api.post('/api/v1/namespaces/default/services', svc('d', {}));
    expect(noPorts.status).toBe(422);
    expect(noPorts.body.message).toContain('spec.ports: Required value');
    const headless = await h.api.post('/api/v1/namespaces/default/services', svc('e', { clusterIP: 'None' }));
    expect(headless.status).toBe(201);
    const unnamed = await h.api.post(
      '/api/v1/namespaces/default/services',
      svc('f', { ports: [{ port: 80 }, { port: 81, name: 'x' }] }),
    );
    expect(unnamed.status).toBe(422);
    expect(unnamed.body.message).toContain('spec.ports[0].name: Required value');
    const nodePort = await h.api.post(
      '/api/v1/namespaces/default/services',
      svc('g', { type: 'NodePort', ports: [{ port: 80 }] }),
    );
    expect(nodePort.status).toBe(422);
    const changed = await h.api.patch('/api/v1/namespaces/default/services/a', 'merge', {
      spec: { clusterIP: '10.96.0.77' },
    });
    expect(changed.status).toBe(422);
    expect(changed.body.message).toContain('may not change once set');
    const relabelled = await h.api.patch('/api/v1/namespaces/default/services/a', 'merge', {
      metadata: { labels: { x: 'y' } },
    });
    expect(relabelled.status).toBe(200);
    expect(relabelled.body.spec.clusterIP).toBe(ip);
  });

  it('is served to kubectl (short name svc)', async () => {
    const out = await kubectl(KUBECTL.newest, h.kubeconfigPath, ['get', 'svc', 'fooservice', '-o', 'name']);
    expect(out.stdout.trim()).toBe('service/fooservice');
  });
});
