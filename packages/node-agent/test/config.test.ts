import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatFieldError } from '@kh/apimachinery';
import { describe, expect, it } from 'vitest';
import { featureEnabled } from '../src/config/feature_gates.js';
import { ConfigError } from '../src/config/field_errors.js';
import { flagsHelp, parseFlags } from '../src/config/flags.js';
import { decodeKubeletConfiguration, loadKubeletConfiguration } from '../src/config/load.js';
import { IMAGE_GC_PERIOD_FLAG, testOnlyFlags } from '../src/config/test_only.js';
import { defaultKubeletConfiguration } from '../src/config/types.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-config-'));
function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}
async function loadErrors(path: string | undefined, argv: string[] = []): Promise<string[]> {
  const flags = parseFlags(argv);
  try {
    await loadKubeletConfiguration(path, flags.configOverrides);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).errors.map(formatFieldError);
  }
  return [];
}

const HEADER = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';

describe('defaults', () => {
  it('match the kubelet v1beta1 defaults', async () => {
    const { config, resolved } = await loadKubeletConfiguration(undefined);
    expect(config).toMatchObject({
      address: '0.0.0.0',
      port: 10250,
      healthzBindAddress: '127.0.0.1',
      healthzPort: 10248,
      maxPods: 110,
      nodeStatusUpdateFrequency: '10s',
      nodeStatusReportFrequency: '5m0s',
      nodeLeaseDurationSeconds: 40,
      syncFrequency: '1m0s',
      evictionHard: {
        'memory.available': '100Mi',
        'nodefs.available': '10%',
        'nodefs.inodesFree': '5%',
        'imagefs.available': '15%',
      },
      evictionPressureTransitionPeriod: '5m0s',
      imageGCHighThresholdPercent: 85,
      imageGCLowThresholdPercent: 80,
      imageMinimumGCAge: '2m0s',
      serializeImagePulls: true,
      registryPullQPS: 5,
      registryBurst: 10,
      runtimeRequestTimeout: '2m0s',
      nodeStatusMaxImages: 50,
      containerLogMaxSize: '10Mi',
      containerLogMaxFiles: 5,
      registerNode: true,
      authentication: { anonymous: { enabled: false }, webhook: { enabled: true } },
      authorization: { mode: 'Webhook' },
    });
    expect(resolved.nodeStatusUpdateFrequencyMs).toBe(10_000);
    expect(resolved.nodeStatusReportFrequencyMs).toBe(300_000);
    expect(resolved.nodeLeaseRenewIntervalMs).toBe(10_000);
    expect(resolved.runtimeRequestTimeoutMs).toBe(120_000);
    const mem = resolved.evictionHard.find((t) => t.signal === 'memory.available');
    expect(mem && 'quantity' in mem.value && mem.value.quantity.value()).toBe(104_857_600n);
    const nodefs = resolved.evictionHard.find((t) => t.signal === 'nodefs.available');
    expect(nodefs?.value).toEqual({ percentage: 0.1 });
  });
});

describe('container log rotation settings', () => {
  it('default to the kubelet values and refuse a monitor interval under 3s or no workers', async () => {
    const { config, resolved } = await loadKubeletConfiguration(undefined);
    expect(config).toMatchObject({ containerLogMaxWorkers: 1, containerLogMonitorInterval: '10s' });
    expect(resolved.containerLogMonitorIntervalMs).toBe(10_000);
    expect(
      await loadErrors(
        file('logrot.yaml', `${HEADER}containerLogMonitorInterval: 1s\ncontainerLogMaxWorkers: 0\n`),
      ),
    ).toEqual([
      'containerLogMaxWorkers: Invalid value: 0: must be greater than or equal to 1',
      'containerLogMonitorInterval: Invalid value: "1s": must be a positive time duration greater than or equal to 3s',
    ]);
  });
});

describe('config file', () => {
  it('reads fields with Go durations and quantities', async () => {
    const p = file(
      'ok.yaml',
      HEADER +
        `nodeStatusUpdateFrequency: 1m30s
maxPods: 20
kubeReserved: { cpu: 100m, memory: 1Gi }
evictionSoft: { memory.available: 500Mi }
evictionSoftGracePeriod: { memory.available: 1m }
registerWithTaints: [{ key: dedicated, value: gpu, effect: NoSchedule }]
authentication: { anonymous: { enabled: true } }
featureGates: { PodAndContainerStatsFromCRI: true, SomeGateOfAnotherPart: false }
`,
    );
    const { config, resolved } = await loadKubeletConfiguration(p);
    expect(config.maxPods).toBe(20);
    expect(config.featureGates).toEqual({ PodAndContainerStatsFromCRI: true, SomeGateOfAnotherPart: false });
    expect(featureEnabled(config, 'PodAndContainerStatsFromCRI')).toBe(true);
    // Unset gates keep kubelet 1.33's defaults.
    expect(featureEnabled(config, 'ContainerCheckpoint')).toBe(true);
    expect(featureEnabled(defaultKubeletConfiguration(), 'PodAndContainerStatsFromCRI')).toBe(false);
    expect(resolved.nodeStatusUpdateFrequencyMs).toBe(90_000);
    expect(resolved.kubeReserved.cpu?.milliValue()).toBe(100n);
    expect(resolved.evictionSoft[0]).toMatchObject({ signal: 'memory.available', gracePeriodMs: 60_000 });
    // Nested objects merge with defaults instead of replacing them.
    expect(config.authentication.webhook.enabled).toBe(true);
    expect(config.authentication.anonymous.enabled).toBe(true);
    expect(config.registerWithTaints).toEqual([{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]);
  });

  it('accepts the config.yaml kubeadm writes on a real node', () => {
    const text = readFileSync(new URL('fixtures/kubeadm-config.yaml', import.meta.url), 'utf8');
    const { errors, config } = decodeKubeletConfiguration(text);
    expect(errors).toEqual([]);
    expect(config.staticPodPath).toBe('/etc/kubernetes/manifests');
    expect(config.clusterDNS).toEqual(['10.96.0.10']);
  });

  it('lists every problem with field path, value and reason', async () => {
    const p = file(
      'bad.yaml',
      HEADER +
        `port: 70000
maxPods: -1
nodeStatusUpdateFrequency: 10
syncFrequency: 1d
imageGCHighThresholdPercent: 50
imageGCLowThresholdPercent: 60
evictionHard: { memory.available: 100MB, disk.available: 10% }
evictionSoft: { nodefs.available: 20% }
kubeReserved: { cpu: lots }
clusterDNS: [10.96.0.10, not-an-ip]
authorization: { mode: Everyone }
registerWithTaints: [{ key: "", effect: Sometimes }]
serializeImagePulls: "yes"
frobnicate: true
authentication: { anonymous: { enabled: false, extra: 1 } }
featureGates: { ContainerCheckpoint: "on" }
`,
    );
    const errors = await loadErrors(p);
    expect(errors).toEqual(
      expect.arrayContaining([
        'port: Invalid value: 70000: must be between 1 and 65535, inclusive',
        'maxPods: Invalid value: -1: must be greater than or equal to 0',
        'nodeStatusUpdateFrequency: Invalid value: 10: must be a duration string such as "1m30s"',
        'syncFrequency: Invalid value: "1d": invalid duration "1d"',
        'imageGCLowThresholdPercent: Invalid value: 60: must be less than imageGCHighThresholdPercent (50)',
        expect.stringMatching(
          /^evictionHard\[memory\.available\]: Invalid value: "100MB": unable to parse quantity's suffix "MB"/,
        ),
        expect.stringMatching(
          /^evictionHard\[disk\.available\]: Unsupported value: "disk\.available": supported values: .*"memory\.available"/,
        ),
        'evictionSoftGracePeriod[nodefs.available]: Required value: grace period must be specified for the soft eviction threshold nodefs.available',
        expect.stringMatching(/^kubeReserved\[cpu\]: Invalid value: "lots"/),
        'clusterDNS[1]: Invalid value: "not-an-ip": must be a valid IP address',
        'authorization.mode: Unsupported value: "Everyone": supported values: "AlwaysAllow", "Webhook"',
        'registerWithTaints[0].key: Required value',
        'registerWithTaints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
        'serializeImagePulls: Invalid value: "yes": must be of type boolean',
        'frobnicate: unknown field',
        'authentication.anonymous.extra: unknown field',
        'featureGates[ContainerCheckpoint]: Invalid value: "on": must be a boolean',
      ]),
    );
    expect(errors).toHaveLength(17);
  });

  it('reports YAML syntax errors with their position', async () => {
    const errors = await loadErrors(file('syntax.yaml', `${HEADER}port: [1, 2\n`));
    expect(errors[0]).toMatch(/^<line \d+, column \d+>: Invalid value/);
  });

  it('rejects a missing or wrong apiVersion and kind', async () => {
    expect(await loadErrors(file('nokind.yaml', 'port: 1\n'))).toEqual(
      expect.arrayContaining(['apiVersion: Required value', 'kind: Required value']),
    );
    const errors = await loadErrors(file('wrongkind.yaml', 'apiVersion: v1\nkind: Pod\n'));
    expect(errors).toContain(
      'apiVersion: Unsupported value: "v1": supported values: "kubelet.config.k8s.io/v1beta1"',
    );
    expect(errors).toContain('kind: Unsupported value: "Pod": supported values: "KubeletConfiguration"');
  });

  it('names an unreadable file', async () => {
    const errors = await loadErrors(join(dir, 'missing.yaml'));
    expect(errors[0]).toMatch(/^--config: Invalid value: ".*missing\.yaml": ENOENT/);
  });

  it('replaces evictionHard as a whole when the file sets it, as the kubelet does', async () => {
    const { config } = await loadKubeletConfiguration(
      file('eh.yaml', `${HEADER}evictionHard: { memory.available: 1Gi }\n`),
    );
    expect(config.evictionHard).toEqual({ 'memory.available': '1Gi' });
  });
});

describe('flags', () => {
  it('parse kubelet flag syntax', () => {
    const { options, configOverrides, errors } = parseFlags([
      '--kubeconfig=/etc/kubeconfig',
      '--hostname-override',
      'node-a',
      '--node-ip=10.0.0.5',
      '--node-labels=tier=web,zone.example.com/rack=r1',
      '--node-labels=node.kubernetes.io/exclude-from-external-load-balancers=true',
      '--register-node=false',
      '--register-with-taints=dedicated=gpu:NoSchedule,spot:PreferNoSchedule',
      '--container-runtime-endpoint=unix:///run/kh/containerd.sock',
      '--runtime-request-timeout=30s',
      '--eviction-hard=memory.available<200Mi,nodefs.available<5%',
      '--kube-reserved=cpu=100m,memory=500Mi',
      '--anonymous-auth',
      '--root-dir=/tmp/kubelet',
    ]);
    expect(errors).toEqual([]);
    expect(options).toMatchObject({
      kubeconfig: '/etc/kubeconfig',
      hostnameOverride: 'node-a',
      nodeIp: '10.0.0.5',
      rootDir: '/tmp/kubelet',
      certDir: '/tmp/kubelet/pki',
      nodeLabels: {
        tier: 'web',
        'zone.example.com/rack': 'r1',
        'node.kubernetes.io/exclude-from-external-load-balancers': 'true',
      },
    });
    expect(configOverrides).toEqual({
      registerNode: false,
      registerWithTaints: [
        { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' },
        { key: 'spot', effect: 'PreferNoSchedule' },
      ],
      containerRuntimeEndpoint: 'unix:///run/kh/containerd.sock',
      runtimeRequestTimeout: '30s',
      evictionHard: { 'memory.available': '200Mi', 'nodefs.available': '5%' },
      kubeReserved: { cpu: '100m', memory: '500Mi' },
      authentication: { anonymous: { enabled: true } },
    });
  });

  it('take the test-only image GC period as a hidden flag, never a configuration field', () => {
    const parsed = parseFlags(testOnlyFlags({ imageGCPeriod: '15s' }));
    expect(parsed.errors).toEqual([]);
    expect(parsed.options.imageGcPeriod).toBe('15s');
    expect(parsed.configOverrides).toEqual({});
    expect(parseFlags([]).options.imageGcPeriod).toBe('');
    expect(testOnlyFlags({})).toEqual([]);
    expect(flagsHelp()).not.toContain(IMAGE_GC_PERIOD_FLAG);
    expect(flagsHelp()).toContain('--runtime-streaming-address');
    const zero = parseFlags([`--${IMAGE_GC_PERIOD_FLAG}=0s`]).errors.map(formatFieldError);
    expect(zero).toEqual([expect.stringContaining('must be greater than 0')]);
    expect(zero[0]).toContain(`--${IMAGE_GC_PERIOD_FLAG}`);
    expect(parseFlags([`--${IMAGE_GC_PERIOD_FLAG}=soon`]).errors).toHaveLength(1);
  });

  it('override the config file', async () => {
    const p = file('override.yaml', `${HEADER}maxPods: 20\nport: 11250\nregisterNode: true\n`);
    const flags = parseFlags(['--max-pods=30', '--register-node=false']);
    const { config } = await loadKubeletConfiguration(p, flags.configOverrides);
    expect(config.maxPods).toBe(30);
    expect(config.registerNode).toBe(false);
    expect(config.port).toBe(11250);
  });

  it('cgroupsPerQOS (default true) and podPidsLimit from the file, and their kubelet flags', async () => {
    expect(defaultKubeletConfiguration().cgroupsPerQOS).toBe(true);
    const p = file('cgroups.yaml', `${HEADER}cgroupsPerQOS: false\npodPidsLimit: 100\n`);
    expect((await loadKubeletConfiguration(p, {})).config).toMatchObject({
      cgroupsPerQOS: false,
      podPidsLimit: 100,
    });
    const flags = parseFlags(['--cgroups-per-qos=false', '--pod-max-pids=42']);
    const { config } = await loadKubeletConfiguration(undefined, flags.configOverrides);
    expect(config).toMatchObject({ cgroupsPerQOS: false, podPidsLimit: 42 });
    expect(await loadErrors(file('cgroups-bad.yaml', `${HEADER}cgroupsPerQOS: maybe\n`))).toHaveLength(1);
  });

  it('report every bad flag', () => {
    const { errors } = parseFlags([
      '--no-such-flag=1',
      '--max-pods=many',
      '--register-node=maybe',
      '--runtime-request-timeout=5',
      '--node-labels=node-role.kubernetes.io/master=',
      '--register-with-taints=justakey',
      '--cluster-dns=1.1.1.1,nope',
      'positional',
      '--kubeconfig',
    ]);
    expect(errors.map(formatFieldError)).toEqual([
      '--no-such-flag: unknown field',
      '--max-pods: Invalid value: "many": must be an integer',
      '--register-node: Invalid value: "maybe": must be true or false',
      '--runtime-request-timeout: Invalid value: "5": missing unit in duration "5"',
      expect.stringMatching(
        /^--node-labels\[node-role\.kubernetes\.io\/master\]: Invalid value: .*unknown 'kubernetes\.io'/,
      ),
      '--register-with-taints: Invalid value: "justakey": must be of the form key=value:Effect or key:Effect',
      '--cluster-dns: Invalid value: "1.1.1.1,nope": not IP addresses: nope',
      '<args>: Invalid value: "positional": unexpected argument; the agent takes flags only',
      '--kubeconfig: Required value: flag needs an argument',
    ]);
  });

  it('flag values are validated with the configuration', async () => {
    const errors = await loadErrors(undefined, ['--register-with-taints=Bad Key=v:NoSchedule', '--port=0']);
    expect(errors).toEqual([
      'port: Invalid value: 0: must be between 1 and 65535, inclusive',
      expect.stringMatching(/^registerWithTaints\[0\]\.key: Invalid value: "Bad Key"/),
    ]);
  });

  it('default config is itself valid', async () => {
    expect(defaultKubeletConfiguration().maxPods).toBe(110);
    expect(await loadErrors(undefined)).toEqual([]);
  });
});

describe('security fields', () => {
  it('default to seccompDefault false and no unsafe sysctls, and are read from the file', async () => {
    expect(defaultKubeletConfiguration()).toMatchObject({ seccompDefault: false, allowedUnsafeSysctls: [] });
    const { config } = await loadKubeletConfiguration(
      file(
        'sec.yaml',
        `${HEADER}seccompDefault: true\nallowedUnsafeSysctls: ["kernel.msg*", "net.core.somaxconn"]\n`,
      ),
    );
    expect(config.seccompDefault).toBe(true);
    expect(config.allowedUnsafeSysctls).toEqual(['kernel.msg*', 'net.core.somaxconn']);
  });

  it('reject an unsafe sysctl pattern the kubelet would refuse at start', async () => {
    const errors = await loadErrors(
      file('sysctl.yaml', `${HEADER}allowedUnsafeSysctls: ["vm.swappiness", "Bad..name"]\n`),
    );
    expect(errors).toEqual([
      'allowedUnsafeSysctls[0]: Invalid value: "vm.swappiness": the sysctls "vm.swappiness" are not known to be namespaced',
      expect.stringMatching(
        /^allowedUnsafeSysctls\[1\]: Invalid value: "Bad\.\.name": sysctl "Bad\.\.name" must have at most 253/,
      ),
    ]);
  });
});

describe('userNamespaces.idsPerPod', () => {
  it('is unset by default, and read from the file', async () => {
    expect(defaultKubeletConfiguration().userNamespaces).toBeUndefined();
    const { config } = await loadKubeletConfiguration(
      file('userns.yaml', `${HEADER}userNamespaces:\n  idsPerPod: 131072\n`),
    );
    expect(config.userNamespaces).toEqual({ idsPerPod: 131072 });
    expect(await loadErrors(file('userns-empty.yaml', `${HEADER}userNamespaces: {}\n`))).toEqual([]);
  });

  it('must be whole 65536-ID units within the 32-bit ID space, with the kubelet messages', async () => {
    const errorsFor = (ids: unknown) =>
      loadErrors(file('userns-bad.yaml', `${HEADER}userNamespaces:\n  idsPerPod: ${JSON.stringify(ids)}\n`));
    expect(await errorsFor(65535)).toEqual([
      'userNamespaces.idsPerPod: Invalid value: 65535: must not be less than 65536',
    ]);
    expect(await errorsFor(65536 * 2 + 1)).toEqual([
      'userNamespaces.idsPerPod: Invalid value: 131073: must be a multiple of 65536',
    ]);
    expect(await errorsFor(2 ** 32)).toEqual([
      'userNamespaces.idsPerPod: Invalid value: 4294967296: must not be more than 4294967295',
    ]);
    expect(await errorsFor('65536')).toEqual([
      'userNamespaces.idsPerPod: Invalid value: "65536": must be of type number',
    ]);
    expect(
      await loadErrors(file('userns-unknown.yaml', `${HEADER}userNamespaces:\n  idsPerPods: 65536\n`)),
    ).toEqual(['userNamespaces.idsPerPods: unknown field']);
  });
});

describe('image pull credential verification (KubeletEnsureSecretPulledImages)', () => {
  const gate = 'featureGates:\n  KubeletEnsureSecretPulledImages: true\n';
  it('is off by default, with no policy and no allowlist', () => {
    const config = defaultKubeletConfiguration();
    expect(featureEnabled(config, 'KubeletEnsureSecretPulledImages')).toBe(false);
    expect(config.imagePullCredentialsVerificationPolicy).toBe('');
    expect(config.preloadedImagesVerificationAllowlist).toEqual([]);
  });

  it('reads the policy and the allowlist from the file with the gate on', async () => {
    const { config } = await loadKubeletConfiguration(
      file(
        'creds.yaml',
        `${HEADER}${gate}imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: ["registry:5000/base", "registry:5000/team/*"]\n`,
      ),
    );
    expect(config.imagePullCredentialsVerificationPolicy).toBe('NeverVerifyAllowlistedImages');
    expect(config.preloadedImagesVerificationAllowlist).toEqual([
      'registry:5000/base',
      'registry:5000/team/*',
    ]);
  });

  it('needs the gate, a known policy, NeverVerifyAllowlistedImages for an allowlist, and valid patterns', async () => {
    expect(
      await loadErrors(
        file('creds-nogate.yaml', `${HEADER}imagePullCredentialsVerificationPolicy: AlwaysVerify\n`),
      ),
    ).toEqual([
      'imagePullCredentialsVerificationPolicy: Forbidden: requires feature gate KubeletEnsureSecretPulledImages',
    ]);
    expect(
      await loadErrors(
        file('creds-bad.yaml', `${HEADER}${gate}imagePullCredentialsVerificationPolicy: Sometimes\n`),
      ),
    ).toEqual([
      'imagePullCredentialsVerificationPolicy: Unsupported value: "Sometimes": supported values: "NeverVerify", "NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages", "AlwaysVerify"',
    ]);
    expect(
      await loadErrors(
        file(
          'creds-list.yaml',
          `${HEADER}${gate}imagePullCredentialsVerificationPolicy: AlwaysVerify\npreloadedImagesVerificationAllowlist: ["registry:5000/base:1"]\n`,
        ),
      ),
    ).toEqual([
      'preloadedImagesVerificationAllowlist[0]: Invalid value: "registry:5000/base:1": neither tag nor digest is accepted in an image reference',
      'preloadedImagesVerificationAllowlist: Invalid value: ["registry:5000/base:1"]: can only be set when imagePullCredentialsVerificationPolicy is "NeverVerifyAllowlistedImages"',
    ]);
  });
});

describe('node allocatable enforcement (the kubelet validation cases)', () => {
  it('defaults to [pods] with no reserved cgroups', () => {
    expect(defaultKubeletConfiguration()).toMatchObject({
      enforceNodeAllocatable: ['pods'],
      kubeReservedCgroup: '',
      systemReservedCgroup: '',
    });
  });

  it('accepts every key with the cgroups the reserved ones need, from the file and from flags', async () => {
    const { config } = await loadKubeletConfiguration(
      file(
        'alloc.yaml',
        `${HEADER}enforceNodeAllocatable: [pods, system-reserved, kube-reserved]\nsystemReservedCgroup: /system.slice\nkubeReservedCgroup: /kube-reserved\n`,
      ),
    );
    expect(config.enforceNodeAllocatable).toEqual(['pods', 'system-reserved', 'kube-reserved']);
    const flags = parseFlags(['--enforce-node-allocatable=kube-reserved', '--kube-reserved-cgroup=/kube']);
    const fromFlags = await loadKubeletConfiguration(undefined, flags.configOverrides);
    expect(fromFlags.config).toMatchObject({
      enforceNodeAllocatable: ['kube-reserved'],
      kubeReservedCgroup: '/kube',
    });
    expect(
      (await loadKubeletConfiguration(file('none.yaml', `${HEADER}enforceNodeAllocatable: [none]\n`))).config,
    ).toMatchObject({ enforceNodeAllocatable: ['none'] });
  });

  it('requires systemReservedCgroup for system-reserved and kubeReservedCgroup for kube-reserved', async () => {
    expect(await loadErrors(file('sr.yaml', `${HEADER}enforceNodeAllocatable: [system-reserved]\n`))).toEqual(
      [
        'systemReservedCgroup: Required value: must be specified when "system-reserved" is contained in enforceNodeAllocatable',
      ],
    );
    expect(await loadErrors(undefined, ['--enforce-node-allocatable=pods,kube-reserved'])).toEqual([
      'kubeReservedCgroup: Required value: must be specified when "kube-reserved" is contained in enforceNodeAllocatable',
    ]);
  });

  it('refuses none with other keys, and unknown keys', async () => {
    expect(
      await loadErrors(undefined, [
        '--enforce-node-allocatable=none,kube-reserved',
        '--kube-reserved-cgroup=/k',
      ]),
    ).toEqual([
      'enforceNodeAllocatable: Invalid value: ["none","kube-reserved"]: may not contain additional enforcements when "none" is specified',
    ]);
    expect(
      await loadErrors(
        file('bad.yaml', `${HEADER}enforceNodeAllocatable: [invalid-enforce-node-allocatable]\n`),
      ),
    ).toEqual([
      'enforceNodeAllocatable[0]: Unsupported value: "invalid-enforce-node-allocatable": supported values: "pods", "system-reserved", "kube-reserved", "none"',
    ]);
    expect(await loadErrors(file('type.yaml', `${HEADER}enforceNodeAllocatable: pods\n`))).toEqual([
      'enforceNodeAllocatable: Invalid value: "pods": must be of type array',
    ]);
  });
});

describe('graceful node shutdown fields (the kubelet validation cases)', () => {
  const errorsFor = (name: string, body: string) => loadErrors(file(name, `${HEADER}${body}`));

  it('default to off, and are read from the file', async () => {
    expect(defaultKubeletConfiguration()).toMatchObject({
      shutdownGracePeriod: '0s',
      shutdownGracePeriodCriticalPods: '0s',
      shutdownGracePeriodByPodPriority: [],
    });
    const { config } = await loadKubeletConfiguration(
      file(
        'shutdown.yaml',
        `${HEADER}shutdownGracePeriodByPodPriority:\n- priority: 2000000000\n  shutdownGracePeriodSeconds: 30\n- priority: 1000\n  shutdownGracePeriodSeconds: 10\n`,
      ),
    );
    expect(config.shutdownGracePeriodByPodPriority).toEqual([
      { priority: 2000000000, shutdownGracePeriodSeconds: 30 },
      { priority: 1000, shutdownGracePeriodSeconds: 10 },
    ]);
    expect(
      await errorsFor('shutdown-ok.yaml', 'shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n'),
    ).toEqual([]);
  });

  it('refuse a critical period over the total, sub-second periods and bad entries', async () => {
    expect(
      await errorsFor(
        'shutdown-crit.yaml',
        'shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n',
      ),
    ).toEqual(['shutdownGracePeriodCriticalPods: Invalid value: "20s": must be <= shutdownGracePeriod 10s']);
    expect(await errorsFor('shutdown-ms.yaml', 'shutdownGracePeriod: 500ms\n')).toEqual([
      'shutdownGracePeriod: Invalid value: "500ms": must be either zero or otherwise >= 1 sec',
    ]);
    expect(
      await errorsFor(
        'shutdown-entries.yaml',
        'shutdownGracePeriodByPodPriority:\n- priority: "high"\n  shutdownGracePeriodSeconds: 1\n  extra: 1\n',
      ),
    ).toEqual([
      'shutdownGracePeriodByPodPriority[0].extra: unknown field',
      'shutdownGracePeriodByPodPriority[0].priority: Invalid value: "high": must be an integer',
    ]);
  });

  it('need their feature gates, and the two ways of configuring exclude each other', async () => {
    expect(
      await errorsFor(
        'shutdown-gate.yaml',
        'featureGates:\n  GracefulNodeShutdown: false\nshutdownGracePeriod: 30s\n',
      ),
    ).toEqual([
      'shutdownGracePeriod: Forbidden: specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown',
    ]);
    const byPriority = 'shutdownGracePeriodByPodPriority:\n- priority: 0\n  shutdownGracePeriodSeconds: 0\n';
    expect(
      await errorsFor(
        'shutdown-prio-gate.yaml',
        `featureGates:\n  GracefulNodeShutdownBasedOnPodPriority: false\n${byPriority}`,
      ),
    ).toEqual([
      'shutdownGracePeriodByPodPriority: Forbidden: Specifying shutdownGracePeriodByPodPriority requires feature gate GracefulNodeShutdownBasedOnPodPriority',
    ]);
    expect(await errorsFor('shutdown-both.yaml', `shutdownGracePeriod: 30s\n${byPriority}`)).toEqual([
      'shutdownGracePeriodByPodPriority: Forbidden: Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time',
    ]);
  });
});
