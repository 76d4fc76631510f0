import {
  ContainerConfig,
  InvalidArgumentError,
  MountPropagation,
  NamespaceMode,
  PodSandboxConfig,
  Protocol,
  SecurityProfile_ProfileType,
  Signal,
} from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { containerCreateOptions, dockerUser } from '../src/shim/container_create.js';
import { LabelKeys } from '../src/shim/labels.js';
import { sandboxCreateOptions } from '../src/shim/sandbox_run.js';

const sandboxConfig = PodSandboxConfig.fromPartial({
  metadata: { name: 'web', namespace: 'ns', uid: 'u1', attempt: 1 },
  hostname: 'web-0',
  logDirectory: '/var/log/pods/ns_web_u1',
  dnsConfig: { servers: ['10.0.0.10'], searches: ['ns.svc.cluster.local'], options: ['ndots:5'] },
  portMappings: [
    { protocol: Protocol.TCP, containerPort: 80, hostPort: 8080, hostIp: '127.0.0.1' },
    { protocol: Protocol.UDP, containerPort: 53 },
  ],
  labels: { app: 'web' },
  annotations: { note: 'x' },
  linux: { cgroupParent: '/kubepods/pod-u1', sysctls: { 'net.ipv4.ip_unprivileged_port_start': '0' } },
});
const params = { image: 'pause:1', network: 'bridge', runtimeHandler: '', createdAt: 42n };

describe('sandboxCreateOptions', () => {
  const o = sandboxCreateOptions(sandboxConfig, params);

  it('names and labels the pause container so state can be rebuilt from Docker', () => {
    expect(o.name).toBe('k8s_POD_web_ns_u1_1');
    expect(o.Labels).toMatchObject({
      app: 'web',
      'annotation.note': 'x',
      [LabelKeys.containerType]: 'podsandbox',
      [LabelKeys.createdAt]: '42',
      [LabelKeys.logDirectory]: '/var/log/pods/ns_web_u1',
      'io.kubernetes.pod.name': 'web',
    });
    expect(JSON.parse(o.Labels?.[LabelKeys.metadata] ?? '')).toEqual({
      name: 'web',
      namespace: 'ns',
      uid: 'u1',
      attempt: 1,
    });
  });

  it('maps hostname, DNS, ports, cgroup parent and sysctls', () => {
    expect(o.Hostname).toBe('web-0');
    expect(o.HostConfig).toMatchObject({
      NetworkMode: 'bridge',
      IpcMode: 'shareable',
      Dns: ['10.0.0.10'],
      DnsSearch: ['ns.svc.cluster.local'],
      DnsOptions: ['ndots:5'],
      CgroupParent: '/kubepods/pod-u1',
      Sysctls: { 'net.ipv4.ip_unprivileged_port_start': '0' },
      PortBindings: { '80/tcp': [{ HostIp: '127.0.0.1', HostPort: '8080' }] },
    });
    // A mapping without host port is only exposed.
    expect(o.ExposedPorts).toEqual({ '80/tcp': {}, '53/udp': {} });
  });

  it('uses the host namespaces when asked', () => {
    const host = sandboxCreateOptions(
      PodSandboxConfig.fromPartial({
        ...sandboxConfig,
        linux: {
          securityContext: {
            namespaceOptions: {
              network: NamespaceMode.NODE,
              pid: NamespaceMode.NODE,
              ipc: NamespaceMode.NODE,
            },
          },
        },
      }),
      params,
    );
    expect(host.HostConfig).toMatchObject({ NetworkMode: 'host', PidMode: 'host', IpcMode: 'host' });
    expect(host.HostConfig?.PortBindings).toBeUndefined();
  });
});

const containerConfig = ContainerConfig.fromPartial({
  metadata: { name: 'app', attempt: 2 },
  image: { image: 'busybox:1' },
  command: ['/bin/sh', '-c'],
  args: ['echo hi'],
  workingDir: '/work',
  envs: [{ key: 'A', value: Buffer.from('b=c') }],
  mounts: [
    {
      hostPath: '/h',
      containerPath: '/c',
      readonly: true,
      propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER,
    },
  ],
  labels: { tier: 'x' },
  logPath: 'app/2.log',
  stopSignal: Signal.SIGNAL_SIGINT,
  linux: {
    resources: {
      cpuShares: 512n,
      cpuQuota: 50000n,
      cpuPeriod: 100000n,
      memoryLimitInBytes: 64n << 20n,
      oomScoreAdj: -997n,
    },
    securityContext: {
      runAsUser: { value: 1000n },
      runAsGroup: { value: 2000n },
      readonlyRootfs: true,
      capabilities: { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] },
      supplementalGroups: [3000n],
      noNewPrivs: true,
      seccomp: { profileType: SecurityProfile_ProfileType.Unconfined },
      namespaceOptions: { pid: NamespaceMode.POD },
    },
  },
});
const cparams = {
  sandboxId: 'sb1',
  sandboxMetadata: { name: 'web', namespace: 'ns', uid: 'u1', attempt: 1 },
  cgroupParent: '/kubepods/pod-u1',
  logPath: '/var/log/pods/ns_web_u1/app/2.log',
  shimInstance: 'unix:///run/dockershim.sock',
  createdAt: 7n,
  oomScoreAdjFloor: undefined,
  seccompProfileJson: undefined,
};

describe('containerCreateOptions', () => {
  const o = containerCreateOptions(containerConfig, cparams);

  it('joins the sandbox namespaces and cgroup', () => {
    expect(o.name).toBe('k8s_app_web_ns_u1_2');
    expect(o.HostConfig).toMatchObject({
      NetworkMode: 'container:sb1',
      IpcMode: 'container:sb1',
      PidMode: 'container:sb1',
      CgroupParent: '/kubepods/pod-u1',
    });
  });

  it('maps command, args, env, workdir, mounts and stop signal', () => {
    expect(o).toMatchObject({
      Entrypoint: ['/bin/sh', '-c'],
      Cmd: ['echo hi'],
      Env: ['A=b=c'],
      WorkingDir: '/work',
      StopSignal: 'SIGINT',
      User: '1000:2000',
    });
    expect(o.HostConfig?.Binds).toEqual(['/h:/c:ro,rslave']);
  });

  it('maps resources with swap disabled and the security context', () => {
    expect(o.HostConfig).toMatchObject({
      CpuShares: 512,
      CpuQuota: 50000,
      CpuPeriod: 100000,
      Memory: 64 << 20,
      MemorySwap: 64 << 20,
      OomScoreAdj: -997,
      ReadonlyRootfs: true,
      CapAdd: ['NET_ADMIN'],
      CapDrop: ['ALL'],
      GroupAdd: ['3000'],
      SecurityOpt: ['seccomp=unconfined', 'no-new-privileges'],
    });
  });

  it('records sandbox, log path, creating shim and requested image in labels', () => {
    expect(o.Labels).toMatchObject({
      tier: 'x',
      [LabelKeys.sandboxId]: 'sb1',
      [LabelKeys.logPath]: '/var/log/pods/ns_web_u1/app/2.log',
      [LabelKeys.shimInstance]: 'unix:///run/dockershim.sock',
      [LabelKeys.image]: 'busybox:1',
      'io.kubernetes.container.name': 'app',
    });
  });

  it('clamps oom_score_adj to the floor when restricted', () => {
    expect(
      containerCreateOptions(containerConfig, { ...cparams, oomScoreAdjFloor: -500 }).HostConfig?.OomScoreAdj,
    ).toBe(-500);
  });

  it('rejects a group without a user, and missing fields', () => {
    const bad = ContainerConfig.fromPartial({
      ...containerConfig,
      linux: { securityContext: { runAsGroup: { value: 1n } } },
    });
    expect(() => dockerUser(bad)).toThrow(InvalidArgumentError);
    expect(() =>
      containerCreateOptions(ContainerConfig.fromPartial({ metadata: { name: 'x' } }), cparams),
    ).toThrow(/config.image.image is required/);
  });
});
