// Service environment variables as the kubelet builds them: which services a pod gets, their
// variables, and their place among the container's own envs.
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { makeEnvironmentVariables } from '../../src/kuberuntime/env.js';
import type { PodObjectSource } from '../../src/kuberuntime/pod_objects.js';
import { serviceEnvVars, servicesForPod } from '../../src/kuberuntime/service_env.js';
import { FakeObjects } from '../fake_objects.js';

const service = (namespace: string, name: string, clusterIP: string, ports: object[]): V1Service => ({
  metadata: { namespace, name },
  spec: { clusterIP, ports: ports as never },
});

const FOO = service('ns', 'fooservice', '10.96.12.34', [{ port: 8765, protocol: 'TCP' }]);
const KUBERNETES = service('default', 'kubernetes', '10.96.0.1', [
  { name: 'https', port: 443, protocol: 'TCP' },
]);
const pod = (enableServiceLinks?: boolean): V1Pod => ({
  metadata: { namespace: 'ns', name: 'p' },
  spec: {
    containers: [{ name: 'c', image: 'x' }],
    ...(enableServiceLinks === undefined ? {} : { enableServiceLinks }),
  },
});

describe('servicesForPod', () => {
  it("takes its namespace's services with a cluster IP and the master service; links off leaves only the master", () => {
    const headless = service('ns', 'headless', 'None', [{ port: 80 }]);
    const other = service('elsewhere', 'bar', '10.96.0.9', [{ port: 80 }]);
    const all = [FOO, KUBERNETES, headless, other];
    expect(servicesForPod(pod(), all).map((s) => s.metadata?.name)).toEqual(['fooservice', 'kubernetes']);
    expect(servicesForPod(pod(false), all).map((s) => s.metadata?.name)).toEqual(['kubernetes']);
  });
});

describe('serviceEnvVars', () => {
  it("gives upstream's FOOSERVICE_* variables, named ports and the link variables of every port", () => {
    expect([...serviceEnvVars([FOO])].map(([name, value]) => ({ name, value }))).toEqual([
      { name: 'FOOSERVICE_SERVICE_HOST', value: '10.96.12.34' },
      { name: 'FOOSERVICE_SERVICE_PORT', value: '8765' },
      { name: 'FOOSERVICE_PORT', value: 'tcp://10.96.12.34:8765' },
      { name: 'FOOSERVICE_PORT_8765_TCP', value: 'tcp://10.96.12.34:8765' },
      { name: 'FOOSERVICE_PORT_8765_TCP_PROTO', value: 'tcp' },
      { name: 'FOOSERVICE_PORT_8765_TCP_PORT', value: '8765' },
      { name: 'FOOSERVICE_PORT_8765_TCP_ADDR', value: '10.96.12.34' },
    ]);
    const named = [
      ...serviceEnvVars([
        service('ns', 'my-svc', 'fd00::5', [
          { name: 'dns-udp', port: 53, protocol: 'UDP' },
          { name: 'dns', port: 53, protocol: 'TCP' },
        ]),
      ]),
    ].map(([name, value]) => ({ name, value }));
    expect(named).toContainEqual({ name: 'MY_SVC_SERVICE_PORT_DNS_UDP', value: '53' });
    expect(named).toContainEqual({ name: 'MY_SVC_PORT', value: 'udp://[fd00::5]:53' });
    expect(named).toContainEqual({ name: 'MY_SVC_PORT_53_TCP_PROTO', value: 'tcp' });
  });
});

describe('makeEnvironmentVariables with services', () => {
  it('adds them after the container envs, which win and may expand them', async () => {
    const objects: PodObjectSource = Object.assign(new FakeObjects(), {
      listServices: async () => [FOO, KUBERNETES],
    });
    const p = pod();
    const container = {
      name: 'c',
      image: 'x',
      env: [
        { name: 'KUBERNETES_SERVICE_HOST', value: 'mine' },
        { name: 'URL', value: 'http://$(FOOSERVICE_SERVICE_HOST):$(FOOSERVICE_SERVICE_PORT)' },
      ],
    };
    const envs = await makeEnvironmentVariables(p, container, [], objects);
    const byName = new Map(envs.map((e) => [e.name, e.value]));
    expect(byName.get('URL')).toBe('http://10.96.12.34:8765');
    expect(byName.get('KUBERNETES_SERVICE_HOST')).toBe('mine');
    expect(byName.get('KUBERNETES_SERVICE_PORT_HTTPS')).toBe('443');
    expect(byName.get('FOOSERVICE_PORT_8765_TCP_ADDR')).toBe('10.96.12.34');
    expect(envs.slice(0, 2).map((e) => e.name)).toEqual(['KUBERNETES_SERVICE_HOST', 'URL']);
  });
});
