import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { networkError, parseNetDev } from '../src/core/pod_network.js';
import {
  CniNetworkPlugin,
  CniNotReadyError,
  CniPluginError,
  CniTimeoutError,
  InvalidPodCidrError,
  type PodNetwork,
  sortPodIps,
  TEMPLATED_CONF_FILE,
} from '../src/network/cni.js';
import { parseConf, parseConfList } from '../src/network/config.js';
import { conflist, FakeCni } from './fake_cni.js';

// The CNI client against fake plugins (Node scripts that record their invocations): libcni's
// side of the protocol, the cache, the template, errors and the timeout. No container runs.

let cni: FakeCni;

const pod = (id = 'a'.repeat(64), extra: Partial<PodNetwork> = {}): PodNetwork => ({
  sandboxId: id,
  netns: `/proc/4242/ns/net`,
  podName: 'web',
  podNamespace: 'shop',
  podUid: 'uid-1',
  portMappings: [{ hostPort: 8080, containerPort: 80, protocol: 'tcp', hostIP: '' }],
  ...extra,
});

const plugin = (extra: Partial<Parameters<typeof CniNetworkPlugin.create>[0]> = {}) =>
  CniNetworkPlugin.create({ confDir: cni.confDir, binDirs: [cni.binDir], cacheDir: cni.cacheDir, ...extra });

beforeEach(async () => {
  cni = await FakeCni.create(['loopback', 'fakebridge', 'fakeportmap', 'fakefw']);
});

afterEach(async () => {
  await cni.remove();
});

describe('configuration', () => {
  it('parses conflists and single-plugin confs as libcni does, refusing what it refuses', () => {
    const list = parseConfList(
      JSON.stringify(conflist('n', ['a', 'b'], [{ capabilities: { portMappings: true } }])),
    );
    expect(list.name).toBe('n');
    expect(list.plugins.map((p) => [p.type, p.capabilities])).toEqual([
      ['a', { portMappings: true }],
      ['b', {}],
    ]);
    const one = parseConf(JSON.stringify({ cniVersion: '0.3.1', name: 'solo', type: 'a', x: 1 }));
    expect(JSON.parse(one.bytes)).toEqual({
      name: 'solo',
      cniVersion: '0.3.1',
      plugins: [{ cniVersion: '0.3.1', name: 'solo', type: 'a', x: 1 }],
    });
    expect(() => parseConfList('{')).toThrow(/error parsing configuration list/);
    expect(() => parseConfList(JSON.stringify({ name: 'n', plugins: [] }))).toThrow(/no plugins in list/);
    expect(() => parseConfList(JSON.stringify({ plugins: [{ type: 'a' }] }))).toThrow(/no name/);
    expect(() => parseConfList(JSON.stringify({ name: 'n', plugins: [{}] }))).toThrow(/missing 'type'/);
    // A conflist written into a .conf file has no type of its own.
    expect(() => parseConf(JSON.stringify(conflist('n', ['a'])))).toThrow(/perhaps this is a \.conflist/);
  });

  it('is not ready until the conf dir holds a valid network, then takes the first valid file by name', async () => {
    const p = await plugin();
    expect(await p.status()).toMatch(/^cni config uninitialized: no network config found in /);
    await cni.writeConf('05-broken.conflist', '{ not json');
    await cni.writeConf('07-missing.conflist', conflist('missing', ['nosuchplugin']));
    await cni.script({ fakeportmap: { versions: ['0.3.1'] } });
    await cni.writeConf('08-old.conflist', conflist('old', ['fakebridge', 'fakeportmap']));
    await cni.writeConf('09-notes.txt', 'ignored: not a conf extension');
    expect(await p.status()).toMatch(
      /no valid networks found in .*05-broken.conflist: error parsing.*07-missing.conflist: failed to find plugin "nosuchplugin" in path.*08-old.conflist: plugin type="fakeportmap" does not support config version "0.4.0"/,
    );
    await cni.writeConf('20-good.conflist', conflist('good', ['fakebridge']));
    await cni.writeConf('30-later.conf', { cniVersion: '0.4.0', name: 'later', type: 'fakebridge' });
    expect(await p.status()).toBeUndefined();
    expect(await p.describe()).toMatchObject({
      network: 'good',
      file: join(cni.confDir, '20-good.conflist'),
    });
  });

  it('needs a pod CIDR when the network asks for ipRanges', async () => {
    await cni.writeConf(
      '10-r.conflist',
      conflist('r', ['fakebridge'], [{ capabilities: { ipRanges: true } }]),
    );
    const p = await plugin();
    expect(await p.status()).toBe('cni config needs ipRanges but no PodCIDR set');
    await p.updatePodCidr('10.244.3.0/24');
    expect(await p.status()).toBeUndefined();
    await p.setUpPod(pod());
    const add = (await cni.calls()).find((c) => c.type === 'fakebridge');
    expect(add?.stdin.runtimeConfig).toEqual({ ipRanges: [[{ subnet: '10.244.3.0/24' }]] });
  });
});

describe('ADD and DEL', () => {
  beforeEach(async () => {
    await cni.writeConf(
      '10-pods.conflist',
      conflist(
        'pods',
        ['fakebridge', 'fakeportmap', 'fakefw'],
        [
          { bridge: 'cni0' },
          { capabilities: { portMappings: true, bandwidth: true } },
          { capabilities: { dns: false } },
        ],
      ),
    );
  });

  it('runs lo then the chain, with the kubelet CNI_ARGS, prevResult and runtimeConfig per declared capability', async () => {
    const p = await plugin();
    const dns = { servers: ['10.96.0.10'], searches: ['svc.cluster.local'], options: ['ndots:5'] };
    expect(await p.setUpPod(pod(undefined, { dns }))).toEqual(['10.1.2.3']);
    const calls = await cni.calls();
    expect(calls.map((c) => [c.type, c.command, c.ifName])).toEqual([
      ['loopback', 'ADD', 'lo'],
      ['fakebridge', 'ADD', 'eth0'],
      ['fakeportmap', 'ADD', 'eth0'],
      ['fakefw', 'ADD', 'eth0'],
    ]);
    for (const c of calls) {
      expect(c.containerId).toBe('a'.repeat(64));
      expect(c.netns).toBe('/proc/4242/ns/net');
      expect(c.path).toBe(cni.binDir);
      expect(c.args).toBe(
        `IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=${'a'.repeat(64)};K8S_POD_UID=uid-1`,
      );
    }
    const [lo, bridge, portmap, fw] = calls;
    expect(lo?.stdin).toEqual({ cniVersion: '0.2.0', name: 'cni-loopback', type: 'loopback' });
    expect(bridge?.stdin).toEqual({ type: 'fakebridge', bridge: 'cni0', name: 'pods', cniVersion: '0.4.0' });
    // Each plugin gets its predecessor's result; only declared (and true) capabilities get data.
    expect(portmap?.stdin.prevResult).toMatchObject({ seen: ['fakebridge'] });
    expect(portmap?.stdin.runtimeConfig).toEqual({
      portMappings: [{ hostPort: 8080, containerPort: 80, protocol: 'tcp', hostIP: '' }],
    });
    expect(fw?.stdin.prevResult).toMatchObject({ seen: ['fakebridge', 'fakeportmap'] });
    expect(fw?.stdin.runtimeConfig).toBeUndefined();
  });

  it("caches the result in libcni's layout and tears down from the cache, in reverse order, once", async () => {
    const id = 'b'.repeat(64);
    await (await plugin()).setUpPod(pod(id));
    const results = join(cni.cacheDir, 'results');
    expect((await readdir(results)).sort()).toEqual([`cni-loopback-${id}-lo`, `pods-${id}-eth0`]);
    const cached = JSON.parse(await readFile(join(results, `pods-${id}-eth0`), 'utf8'));
    expect(cached).toMatchObject({
      kind: 'cniCacheV1',
      containerId: id,
      ifName: 'eth0',
      networkName: 'pods',
      netns: '/proc/4242/ns/net',
      cniArgs: expect.arrayContaining([['K8S_POD_NAME', 'web']]),
      capabilityArgs: { portMappings: [expect.objectContaining({ hostPort: 8080 })] },
      result: { ips: [{ address: '10.1.2.3/24', interface: 0 }] },
    });
    // Go's []byte: the config as base64.
    expect(JSON.parse(Buffer.from(cached.config, 'base64').toString('utf8')).name).toBe('pods');
    expect((await stat(join(results, `pods-${id}-eth0`))).mode & 0o777).toBe(0o600);

    // A new plugin instance (a restarted shim), and a conf dir that changed meanwhile.
    await cni.writeConf('10-pods.conflist', conflist('pods', ['fakebridge']));
    await cni.clearCalls();
    const restarted = await plugin();
    expect(await restarted.podIps(id)).toEqual(['10.1.2.3']);
    expect(await restarted.tearDownPod(id, '')).toBe(true);
    const calls = await cni.calls();
    expect(calls.map((c) => [c.type, c.command, c.ifName, c.netns])).toEqual([
      ['loopback', 'DEL', 'lo', ''],
      ['fakefw', 'DEL', 'eth0', ''],
      ['fakeportmap', 'DEL', 'eth0', ''],
      ['fakebridge', 'DEL', 'eth0', ''],
    ]);
    // The ADD's args, capability args and (from 0.4.0) result go to DEL.
    expect(calls[2]?.stdin.runtimeConfig).toEqual({
      portMappings: [expect.objectContaining({ hostPort: 8080 })],
    });
    expect(calls[1]?.stdin.prevResult).toMatchObject({ seen: ['fakebridge', 'fakeportmap', 'fakefw'] });
    expect(calls[3]?.args).toContain('K8S_POD_UID=uid-1');
    expect(await readdir(results)).toEqual([]);
    expect(await restarted.podIps(id)).toBeUndefined();
    await cni.clearCalls();
    expect(await restarted.tearDownPod(id, '')).toBe(false);
    expect(await cni.calls()).toEqual([]);
  });

  it('orders IPv4 first, whatever the plugin returned', async () => {
    await cni.script({ fakebridge: { ips: ['fd00::5/64', '10.9.0.5/24'] } });
    expect(await (await plugin()).setUpPod(pod())).toEqual(['10.9.0.5', 'fd00::5']);
    expect(sortPodIps(['fd00::1', '10.0.0.1', 'fd00::2'])).toEqual(['10.0.0.1', 'fd00::1', 'fd00::2']);
  });

  it("gives a failing plugin's own words, caches nothing, and undoes a half set-up by container id", async () => {
    await cni.script({ fakeportmap: { ADD: 'fail' } });
    const p = await plugin();
    const err = await p.setUpPod(pod()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CniPluginError);
    expect((err as Error).message).toBe(
      'plugin type="fakeportmap" failed (add): fakeportmap says no; try again later',
    );
    expect(await readdir(join(cni.cacheDir, 'results')).catch(() => [])).toEqual([
      `cni-loopback-${'a'.repeat(64)}-lo`,
    ]);
    await cni.clearCalls();
    await p.tearDownFailedSetUp(pod());
    expect((await cni.calls()).map((c) => [c.type, c.command])).toEqual([
      ['fakefw', 'DEL'],
      ['fakeportmap', 'DEL'],
      ['fakebridge', 'DEL'],
    ]);
    expect(await readdir(join(cni.cacheDir, 'results'))).toEqual([]);
    // As the shim answers it: UNKNOWN, the plugin's message (containerd's code for a plugin error).
    expect(networkError(err, 'set up')).toMatchObject({
      codeName: 'UNKNOWN',
      message: expect.stringContaining('fakeportmap says no'),
    });
  });

  it('reports a plugin that writes to stderr or answers garbage', async () => {
    await cni.script({ fakebridge: { ADD: 'stderr' } });
    await expect((await plugin()).setUpPod(pod())).rejects.toThrow(
      /plugin type="fakebridge" failed \(add\): netplugin failed: "panic: fakebridge crashed": exit status 2/,
    );
    await cni.script({ fakebridge: { ADD: 'garbage' } });
    await expect((await plugin()).setUpPod(pod())).rejects.toThrow(/fakebridge.*returned an invalid result/);
  });

  it('kills a plugin that hangs at the deadline', async () => {
    await cni.script({ fakeportmap: { ADD: 'hang' } });
    const started = performance.now();
    const err = await (await plugin({ timeoutMs: 1_500 })).setUpPod(pod()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CniTimeoutError);
    expect((err as Error).message).toMatch(
      /plugin type="fakeportmap" failed \(add\): no answer within 1500 ms; killed/,
    );
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(networkError(err, 'x').codeName).toBe('DEADLINE_EXCEEDED');
  });

  it('refuses set-up while no network is usable', async () => {
    await cni.writeConf('10-pods.conflist', '{');
    const err = await (await plugin()).setUpPod(pod()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CniNotReadyError);
    expect(networkError(err, 'run sandbox')).toMatchObject({
      codeName: 'FAILED_PRECONDITION',
      message: expect.stringMatching(
        /^run sandbox: network plugin is not ready: cni config uninitialized: no valid networks/,
      ),
    });
    expect(await cni.calls()).toEqual([]);
  });
});

describe('pod CIDR and the conf template', () => {
  const template = `{"cniVersion": "0.4.0", "name": "tmpl", "plugins": [{"type": "fakebridge",
  "ranges": [{{range $i, $range := .PodCIDRRanges}}{{if $i}}, {{end}}[{"subnet": "{{$range}}"}]{{end}}],
  "routes": [{{range $i, $route := .Routes}}{{if $i}}, {{end}}{"dst": "{{$route}}"}{{end}}],
  "first": "{{.PodCIDR}}"}]}`;

  it('renders the template into the conf dir at the first pod CIDR, as containerd does, and never over a valid network', async () => {
    const path = join(cni.dir, 'template.json');
    await import('node:fs/promises').then((fs) => fs.writeFile(path, template));
    const p = await plugin({ confTemplate: path });
    expect(await p.status()).toMatch(/cni config uninitialized/);
    await p.updatePodCidr(' 10.244.1.0/24 , fd00:10:244:1::/64 ');
    const written = JSON.parse(await readFile(join(cni.confDir, TEMPLATED_CONF_FILE), 'utf8'));
    expect(written.plugins[0]).toEqual({
      type: 'fakebridge',
      ranges: [[{ subnet: '10.244.1.0/24' }], [{ subnet: 'fd00:10:244:1::/64' }]],
      routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }],
      first: '10.244.1.0/24',
    });
    expect(await p.status()).toBeUndefined();
    // A later CIDR changes nothing: the network is valid (containerd), the first CIDR stays (cri-dockerd).
    await p.updatePodCidr('10.244.9.0/24');
    expect(JSON.parse(await readFile(join(cni.confDir, TEMPLATED_CONF_FILE), 'utf8')).plugins[0].first).toBe(
      '10.244.1.0/24',
    );
    expect((await p.describe()).podCidrs).toEqual(['10.244.1.0/24', 'fd00:10:244:1::/64']);
  });

  it('refuses what is not a CIDR, and a template it cannot use at start-up', async () => {
    const p = await plugin();
    for (const bad of ['10.0.0.0', '10.0.0.0/33', 'nonsense/8', '10.0.0.0/24,x'])
      await expect(p.updatePodCidr(bad)).rejects.toBeInstanceOf(InvalidPodCidrError);
    expect(networkError(new InvalidPodCidrError('x'), 'update').codeName).toBe('INVALID_ARGUMENT');
    await expect(plugin({ confTemplate: join(cni.dir, 'absent.json') })).rejects.toThrow(
      /cni conf template .*absent\.json/,
    );
    const bad = join(cni.dir, 'bad.json');
    await import('node:fs/promises').then((fs) => fs.writeFile(bad, '{{ .PodCIDR | printf "%s" }}'));
    await expect(plugin({ confTemplate: bad })).rejects.toThrow(/unsupported action/);
  });
});

describe("a pod's network usage from its namespace", () => {
  it('reads /proc/<pid>/net/dev without loopback', () => {
    const text = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0
  eth0: 1234567      10    3    0    0     0          0         0      567       5    4    0    0     0       0          0
`;
    expect(parseNetDev(text)).toEqual([
      { name: 'eth0', rxBytes: 1234567n, rxErrors: 3n, txBytes: 567n, txErrors: 4n },
    ]);
    expect(parseNetDev('')).toEqual([]);
  });
});
