import {
  ContainerConfig,
  type DeepPartial,
  InvalidArgumentError,
  type LinuxContainerSecurityContext,
  type LinuxSandboxSecurityContext,
  type Mount,
  MountPropagation,
  NamespaceMode,
  PodSandboxConfig,
  Protocol,
  SecurityProfile_ProfileType,
  Signal,
  SupplementalGroupsPolicy,
} from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import {
  type ContainerCreateParams,
  containerCreateOptions,
  dockerUser,
} from '../src/core/container_create.js';
import { type SandboxCreateParams, sandboxCreateOptions } from '../src/core/sandbox_run.js';
import type { ContainerCreateRequest, HostConfig } from '../src/docker/client.js';
import { LabelKeys } from '../src/model/labels.js';

function hostConfig(o: ContainerCreateRequest): HostConfig {
  if (!o.HostConfig) throw new Error('no HostConfig');
  return o.HostConfig;
}

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
const params: SandboxCreateParams = {
  image: 'pause:1',
  network: 'bridge',
  runtimeHandler: '',
  createdAt: 42n,
  seccompJson: undefined,
  missingCapabilities: ['SYS_RESOURCE'],
};

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

describe('sandboxCreateOptions security', () => {
  const sandboxWith = (securityContext: DeepPartial<LinuxSandboxSecurityContext>, p = params) =>
    hostConfig(
      sandboxCreateOptions(PodSandboxConfig.fromPartial({ ...sandboxConfig, linux: { securityContext } }), p),
    );

  it('runs the pause container unconfined unless a profile is asked for, like containerd', () => {
    expect(sandboxWith({}).SecurityOpt).toEqual(['seccomp=unconfined']);
    expect(sandboxWith({ seccompProfilePath: 'runtime/default' }).SecurityOpt).toEqual([]);
    expect(
      sandboxWith(
        { seccomp: { profileType: SecurityProfile_ProfileType.Localhost, localhostRef: '/p.json' } },
        { ...params, seccompJson: '{"defaultAction":"SCMP_ACT_ALLOW"}' },
      ).SecurityOpt,
    ).toEqual(['seccomp={"defaultAction":"SCMP_ACT_ALLOW"}']);
  });

  it('refuses a seccomp profile path without localhost/, naming the field', () => {
    expect(() => sandboxWith({ seccompProfilePath: '/p.json' })).toThrow(
      /config\.linux\.security_context\.seccomp_profile_path "\/p\.json"/,
    );
  });

  it('emulates a privileged sandbox within the bounding set, without host devices', () => {
    expect(sandboxWith({ privileged: true })).toMatchObject({
      Privileged: false,
      CapAdd: ['ALL'],
      CapDrop: ['SYS_RESOURCE'],
      SecurityOpt: ['seccomp=unconfined', 'apparmor=unconfined'],
      MaskedPaths: [],
      ReadonlyPaths: [],
    });
    expect(sandboxWith({ privileged: true }).Devices).toBeUndefined();
    expect(sandboxWith({ privileged: true }, { ...params, missingCapabilities: [] })).toMatchObject({
      Privileged: true,
    });
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
const cparams: ContainerCreateParams = {
  sandboxId: 'sb1',
  sandboxMetadata: { name: 'web', namespace: 'ns', uid: 'u1', attempt: 1 },
  cgroupParent: '/kubepods/pod-u1',
  logPath: '/var/log/pods/ns_web_u1/app/2.log',
  shimInstance: 'unix:///run/dockershim.sock',
  createdAt: 7n,
  oomScoreAdjFloor: undefined,
  seccompJson: undefined,
  missingCapabilities: ['SYS_RESOURCE'],
  hostDevices: ['/dev/kvm', '/dev/loop0'],
  engineApiVersion: '1.41',
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
    expect(o.HostConfig?.Mounts).toBeUndefined();
  });

  it('makes read-only mounts non-recursive on Engines whose read-only binds are recursive (API 1.44+)', () => {
    const on144 = containerCreateOptions(containerConfig, { ...cparams, engineApiVersion: '1.47' });
    expect(on144.HostConfig?.Binds).toBeUndefined();
    expect(on144.HostConfig?.Mounts).toEqual([
      {
        Type: 'bind',
        Source: '/h',
        Target: '/c',
        ReadOnly: true,
        BindOptions: { Propagation: 'rslave', ReadOnlyNonRecursive: true },
      },
    ]);
  });

  it('makes a recursive read-only mount where the Engine can (API 1.44+), and refuses it as the CRI says', () => {
    const rro = (m: Partial<Mount>) =>
      ContainerConfig.fromPartial({
        ...containerConfig,
        mounts: [{ hostPath: '/h', containerPath: '/c', readonly: true, recursiveReadOnly: true, ...m }],
      });
    expect(
      containerCreateOptions(rro({}), { ...cparams, engineApiVersion: '1.44' }).HostConfig?.Mounts,
    ).toEqual([
      {
        Type: 'bind',
        Source: '/h',
        Target: '/c',
        ReadOnly: true,
        BindOptions: { Propagation: 'rprivate', ReadOnlyForceRecursive: true },
      },
    ]);
    const on144 = { ...cparams, engineApiVersion: '1.44' };
    expect(() => containerCreateOptions(rro({}), cparams)).toThrow(/needs Docker Engine API 1.44/);
    expect(() => containerCreateOptions(rro({ readonly: false }), on144)).toThrow(/must be read-only/);
    expect(() =>
      containerCreateOptions(rro({ propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER }), on144),
    ).toThrow(/must have private propagation/);
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

  it('refuses SupplementalGroupsPolicy Strict with INVALID_ARGUMENT rather than merge the image groups', () => {
    const withPolicy = (supplementalGroupsPolicy: SupplementalGroupsPolicy) =>
      containerCreateOptions(
        ContainerConfig.fromPartial({
          ...containerConfig,
          linux: { securityContext: { supplementalGroupsPolicy } },
        }),
        cparams,
      );
    expect(() => withPolicy(SupplementalGroupsPolicy.Strict)).toThrow(
      /supplemental_groups_policy Strict is not supported by docker/,
    );
    expect(() => withPolicy(SupplementalGroupsPolicy.Strict)).toThrow(InvalidArgumentError);
    expect(() => withPolicy(SupplementalGroupsPolicy.Merge)).not.toThrow();
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

describe('containerCreateOptions security', () => {
  const containerWith = (securityContext: DeepPartial<LinuxContainerSecurityContext>, p = cparams) =>
    hostConfig(
      containerCreateOptions(
        ContainerConfig.fromPartial({
          ...containerConfig,
          devices: [{ hostPath: '/dev/fuse', containerPath: '/dev/fuse', permissions: 'rw' }],
          linux: { securityContext },
        }),
        p,
      ),
    );

  it("passes the kubelet's masked and read-only paths to Docker; empty lists (procMount Unmasked) leave Docker's own, as cri-dockerd's", () => {
    const masked = ['/proc/kcore', '/proc/keys', '/sys/devices/virtual/powercap'];
    const readonly = ['/proc/sys', '/proc/sysrq-trigger'];
    expect(containerWith({ maskedPaths: masked, readonlyPaths: readonly })).toMatchObject({
      MaskedPaths: masked,
      ReadonlyPaths: readonly,
    });
    const unmasked = containerWith({ maskedPaths: [], readonlyPaths: [] });
    expect(unmasked.MaskedPaths).toBeUndefined();
    expect(unmasked.ReadonlyPaths).toBeUndefined();
  });

  it('maps the deprecated seccomp_profile_path as containerd does; the SecurityProfile field wins', () => {
    expect(containerWith({}).SecurityOpt).toEqual(['seccomp=unconfined']);
    expect(containerWith({ seccompProfilePath: 'unconfined' }).SecurityOpt).toEqual(['seccomp=unconfined']);
    expect(containerWith({ seccompProfilePath: 'docker/default' }).SecurityOpt).toEqual([]);
    expect(
      containerWith(
        { seccompProfilePath: 'localhost//p.json' },
        { ...cparams, seccompJson: '{"defaultAction":"SCMP_ACT_ALLOW"}' },
      ).SecurityOpt,
    ).toEqual(['seccomp={"defaultAction":"SCMP_ACT_ALLOW"}']);
    expect(
      containerWith({
        seccompProfilePath: 'unconfined',
        seccomp: { profileType: SecurityProfile_ProfileType.RuntimeDefault },
      }).SecurityOpt,
    ).toEqual([]);
  });

  it('maps AppArmor profiles from either field', () => {
    expect(containerWith({ apparmorProfile: 'unconfined' }).SecurityOpt).toEqual([
      'seccomp=unconfined',
      'apparmor=unconfined',
    ]);
    expect(
      containerWith({
        apparmor: { profileType: SecurityProfile_ProfileType.Localhost, localhostRef: 'k8s-x' },
      }).SecurityOpt,
    ).toContain('apparmor=k8s-x');
    expect(containerWith({ apparmorProfile: 'localhost/k8s-y' }).SecurityOpt).toContain('apparmor=k8s-y');
  });

  it('refuses malformed profiles with INVALID_ARGUMENT naming the field', () => {
    expect(() => containerWith({ seccompProfilePath: '/p.json' })).toThrow(InvalidArgumentError);
    expect(() => containerWith({ seccompProfilePath: 'localhost/' })).toThrow(/seccomp_profile_path/);
    expect(() =>
      containerWith({ seccomp: { profileType: SecurityProfile_ProfileType.Localhost, localhostRef: '' } }),
    ).toThrow(/config\.linux\.security_context\.seccomp\.localhost_ref is required/);
    expect(() =>
      containerWith({ seccomp: { profileType: SecurityProfile_ProfileType.Unconfined, localhostRef: '/p' } }),
    ).toThrow(/seccomp\.localhost_ref may only be set/);
    expect(() => containerWith({ apparmorProfile: 'bogus' })).toThrow(/apparmor_profile "bogus"/);
  });

  it('emulates privileged where the host lacks capabilities: all it has, every device, nothing masked', () => {
    const hc = containerWith({
      privileged: true,
      seccompProfilePath: 'localhost//blocks.json',
      capabilities: { dropCapabilities: ['NET_RAW'] },
      maskedPaths: ['/proc/kcore'],
      noNewPrivs: true,
    });
    expect(hc).toMatchObject({
      Privileged: false,
      CapAdd: ['ALL'],
      CapDrop: ['SYS_RESOURCE'],
      SecurityOpt: ['seccomp=unconfined', 'apparmor=unconfined', 'no-new-privileges'],
      MaskedPaths: [],
      ReadonlyPaths: [],
      DeviceCgroupRules: ['a *:* rwm'],
    });
    expect(hc?.Devices).toEqual([
      { PathOnHost: '/dev/kvm', PathInContainer: '/dev/kvm', CgroupPermissions: 'rwm' },
      { PathOnHost: '/dev/loop0', PathInContainer: '/dev/loop0', CgroupPermissions: 'rwm' },
      { PathOnHost: '/dev/fuse', PathInContainer: '/dev/fuse', CgroupPermissions: 'rw' },
    ]);
  });

  it("uses Docker's Privileged flag where the host can grant every capability", () => {
    const hc = containerWith({ privileged: true }, { ...cparams, missingCapabilities: [] });
    expect(hc).toMatchObject({
      Privileged: true,
      SecurityOpt: ['seccomp=unconfined', 'apparmor=unconfined'],
    });
    expect(hc?.CapAdd).toBeUndefined();
    expect(hc?.Devices).toEqual([
      { PathOnHost: '/dev/fuse', PathInContainer: '/dev/fuse', CgroupPermissions: 'rw' },
    ]);
  });

  it('adds ALL capabilities but those the host cannot grant', () => {
    expect(
      containerWith({ capabilities: { addCapabilities: ['ALL'], dropCapabilities: ['CHOWN'] } }),
    ).toMatchObject({
      CapAdd: ['ALL'],
      CapDrop: ['CHOWN', 'SYS_RESOURCE'],
    });
    expect(containerWith({ capabilities: { addCapabilities: ['NET_ADMIN'] } })).toMatchObject({
      CapAdd: ['NET_ADMIN'],
      CapDrop: undefined,
    });
  });
});
