import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { managedHostsFileContent } from '../../src/kuberuntime/etc_hosts.js';
import { DefaultRuntimeHelper } from '../../src/kuberuntime/runtime_helper.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-hosts-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const LOCALHOST =
  '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n';

const pod = (spec: Partial<V1PodSpec> = {}): V1Pod => ({
  metadata: { name: 'web-0', namespace: 'ns', uid: 'u1' },
  spec: { containers: [{ name: 'app' }], ...spec },
});

describe('managedHostsFileContent', () => {
  it("writes the kubelet's header, localhost names, each pod IP with the hostname and the host aliases", () => {
    expect(
      managedHostsFileContent(['10.1.0.5', 'fd00::5'], 'web-0', 'svc-a.ns.svc.cluster.local', [
        { ip: '1.2.3.4', hostnames: ['a', 'b'] },
      ]),
    ).toBe(
      `# Kubernetes-managed hosts file.\n${LOCALHOST}` +
        '10.1.0.5\tweb-0.svc-a.ns.svc.cluster.local\tweb-0\n' +
        'fd00::5\tweb-0.svc-a.ns.svc.cluster.local\tweb-0\n' +
        '\n# Entries added by HostAliases.\n1.2.3.4\ta\tb\n',
    );
    expect(managedHostsFileContent(['10.1.0.5'], 'web-0', '', undefined)).toBe(
      `# Kubernetes-managed hosts file.\n${LOCALHOST}10.1.0.5\tweb-0\n`,
    );
  });
});

describe('DefaultRuntimeHelper /etc/hosts', () => {
  const hostsMount = (path: string) => ({ containerPath: '/etc/hosts', hostPath: path, readonly: false });

  it('mounts the managed file, named after spec.hostname and subdomain, once the pod has IPs', async () => {
    const h = new DefaultRuntimeHelper(dir, '', undefined, undefined, undefined, {
      clusterDomain: 'cluster.local',
    });
    const p = pod({ hostname: 'db', subdomain: 'svc-a' });
    const c: V1Container = { name: 'app' };
    expect((await h.generateRunContainerOptions(p, c, [])).mounts).toEqual([]);
    const opts = await h.generateRunContainerOptions(p, c, ['10.1.0.5']);
    const file = join(dir, 'u1', 'etc-hosts');
    expect(opts.mounts).toEqual([hostsMount(file)]);
    expect(await readFile(file, 'utf8')).toBe(
      `# Kubernetes-managed hosts file.\n${LOCALHOST}10.1.0.5\tdb.svc-a.ns.svc.cluster.local\tdb\n`,
    );
    expect((await stat(file)).mode & 0o777).toBe(0o644);
  });

  it('leaves /etc/hosts to a container that mounts a volume there', async () => {
    const h = new DefaultRuntimeHelper(dir, '');
    const p = pod({
      volumes: [{ name: 'h', hostPath: { path: join(dir, 'node-hosts'), type: 'FileOrCreate' } }],
    });
    const c: V1Container = { name: 'app', volumeMounts: [{ name: 'h', mountPath: '/etc/hosts' }] };
    const opts = await h.generateRunContainerOptions(p, c, ['10.1.0.5']);
    expect(opts.mounts.map((m) => m.containerPath)).toEqual(['/etc/hosts']);
    expect(opts.mounts[0]?.hostPath).toBe(join(dir, 'node-hosts'));
  });

  it("gives a hostNetwork pod the node's hosts file under the host-network header, with its aliases", async () => {
    const nodeHosts = join(dir, 'node-hosts');
    await writeFile(nodeHosts, '127.0.0.1\tlocalhost\n172.18.0.2\tnode-a\n');
    const h = new DefaultRuntimeHelper(dir, '', undefined, undefined, undefined, {
      nodeHostsPath: nodeHosts,
    });
    const p = pod({ hostNetwork: true, hostAliases: [{ ip: '1.2.3.4', hostnames: ['a'] }] });
    const opts = await h.generateRunContainerOptions(p, { name: 'app' }, ['172.18.0.2']);
    expect(opts.mounts).toEqual([hostsMount(join(dir, 'u1', 'etc-hosts'))]);
    expect(await readFile(join(dir, 'u1', 'etc-hosts'), 'utf8')).toBe(
      '# Kubernetes-managed hosts file (host network).\n127.0.0.1\tlocalhost\n172.18.0.2\tnode-a\n' +
        '\n# Entries added by HostAliases.\n1.2.3.4\ta\n',
    );
  });

  it('fails the container with CreateContainerConfigError when the node hosts file cannot be read', async () => {
    const h = new DefaultRuntimeHelper(dir, '', undefined, undefined, undefined, {
      nodeHostsPath: join(dir, 'missing'),
    });
    await expect(
      h.generateRunContainerOptions(pod({ hostNetwork: true }), { name: 'app' }, ['172.18.0.2']),
    ).rejects.toMatchObject({ reason: 'CreateContainerConfigError' });
  });
});
