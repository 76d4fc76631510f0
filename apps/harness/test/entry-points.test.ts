// The repository's entry points around the harness: docker-compose.yml must be a valid compose
// file whose mounts exist (the workflows are test/workflows.test.ts's).
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CNI_CONF_TEMPLATE, ensureImages, removeLeftovers, runId } from '@kh/testkit';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { projectRoot } from '../src/node/project.js';

const root = projectRoot();
const run = promisify(execFile);
const KUBECTL = '/usr/lib/google-cloud-sdk/bin/kubectl.1.33';
const hasCompose = existsSync('/usr/bin/docker-compose') || existsSync('/usr/local/bin/docker-compose');

describe('docker-compose.yml', () => {
  // docker-compose v1 (Debian's docker-compose package); without it this is reported as skipped.
  // Two runs of its Python start-up take seconds each on a loaded 2-core machine: 60 s, not 5.
  it.skipIf(!hasCompose)(
    'is accepted by `docker-compose config` with its services',
    async () => {
      const env = { ...process.env, KH_NODE_IMAGE: 'kubelet-harness/node:test' };
      const opts = { cwd: root, env };
      const services = (
        await run('docker-compose', ['-f', 'docker-compose.yml', 'config', '--services'], opts)
      ).stdout
        .trim()
        .split('\n')
        .sort();
      expect(services).toEqual(['apiserver', 'images', 'node-containerd', 'node-docker', 'registry']);
      const resolved = parse(
        (await run('docker-compose', ['-f', 'docker-compose.yml', 'config'], opts)).stdout,
      );
      expect(resolved.services.apiserver.image).toBe('kubelet-harness/node:test');
      expect(resolved.services['node-containerd'].cap_drop).toEqual(['SYS_RESOURCE']);
      // Every file or directory of the checkout that the stack mounts exists.
      for (const [name, svc] of Object.entries<{ volumes?: string[] }>(resolved.services)) {
        for (const v of svc.volumes ?? []) {
          const source = v.split(':')[0]!;
          if (source.startsWith(root)) expect(existsSync(source), `${name}: ${source}`).toBe(true);
        }
      }
    },
    60_000,
  );

  it("networks pods from testkit's CNI template, which the nodes fill with their pod CIDR", () => {
    const compose = (f: string) => readFileSync(join(root, 'apps/harness/compose', f), 'utf8');
    expect(compose('cni-conf.template')).toBe(CNI_CONF_TEMPLATE);
    expect(compose('containerd.toml')).toContain('conf_template = "/etc/kh/cni-conf.template"');
    const text = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
    expect(text).toContain('--cni-conf-template=/etc/kh/cni-conf.template');
    expect(text).toContain('--allocate-node-cidrs');
  });

  it('publishes ports on loopback only, by default and as tests override them', () => {
    const text = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
    const ports = [...text.matchAll(/ports: \[(.*)\]/g)].map((m) => m[1]);
    expect(ports.length).toBeGreaterThan(0);
    for (const p of ports) expect(p).toMatch(/^'\$\{KH_[A-Z]+_PUBLISH:-127\.0\.0\.1:\d+\}:\d+'$/);
  });

  // The stack for real: both nodes register Ready with the stack's apiserver, a pod runs on each
  // from the images the stack pushed itself (pause included), and `down -v` leaves nothing behind.
  // Labels and free loopback ports come from the environment.
  it.skipIf(!hasCompose)(
    'comes up with both nodes Ready, runs a pod on each and goes down leaving nothing',
    async () => {
      const stackRun = `${runId}c`;
      const { node } = await ensureImages(['node', 'pause', 'busybox', 'httpd']);
      // The header's commands, as written: its image command picks the node image just ensured.
      const header = readFileSync(join(root, 'docker-compose.yml'), 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('#   '))
        .map((l) => l.slice(4));
      const imageCommand = header.map((l) => /^export KH_NODE_IMAGE=\$\((.*)\)$/.exec(l)?.[1]).find(Boolean);
      expect(imageCommand, 'the header exports KH_NODE_IMAGE').toBeDefined();
      const headerImage = (await run('sh', ['-c', imageCommand!])).stdout.trim();
      expect(headerImage).toBe(node);
      const env = {
        ...process.env,
        KH_NODE_IMAGE: headerImage,
        KH_RUN_ID: stackRun,
        KH_COMPOSE_OWNER: 'test',
        KH_APISERVER_PUBLISH: '127.0.0.1:',
        KH_REGISTRY_PUBLISH: '127.0.0.1:',
      };
      const compose = (...args: string[]) =>
        run('docker-compose', ['-f', 'docker-compose.yml', '-p', `kh-${stackRun}`, ...args], {
          cwd: root,
          env,
        });
      const docker = new Docker();
      const label = [`kh.run=${stackRun}`];
      try {
        await compose('up', '-d');
        const port = (await compose('port', 'apiserver', '6443')).stdout.trim();
        expect(port).toMatch(/^127\.0\.0\.1:\d+$/);
        // The apiserver writes the agents' kubeconfig once it serves; read it as the README says.
        let kubeconfig = '';
        for (let i = 0; i < 150 && !kubeconfig; i++) {
          kubeconfig = await compose('exec', '-T', 'apiserver', 'cat', '/kh/kubeconfig').then(
            (r) => r.stdout,
            () => '',
          );
          if (!kubeconfig) await new Promise((r) => setTimeout(r, 200));
        }
        const kc = new KubeConfig();
        kc.loadFromString(kubeconfig.replace('https://apiserver:6443', `https://${port}`));
        const core = kc.makeApiClient(CoreV1Api);
        const ready = async () =>
          (await core.listNode()).items
            .filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
            .map((n) => n.metadata?.name)
            .sort();
        let nodes: (string | undefined)[] = [];
        for (let i = 0; i < 90 && nodes.length < 2; i++) {
          nodes = await ready().catch(() => []);
          if (nodes.length < 2) await new Promise((r) => setTimeout(r, 1_000));
        }
        expect(nodes).toEqual(['node-containerd', 'node-docker']);
        for (const nodeName of nodes) {
          await core.createNamespacedPod({
            namespace: 'default',
            body: {
              metadata: { name: `bb-${nodeName}` },
              spec: {
                nodeName,
                containers: [
                  {
                    name: 'bb',
                    image: 'registry:5000/kh/busybox:dev',
                    command: ['sh', '-c', 'echo hello from $(hostname); exec sleep 3600'],
                  },
                ],
              },
            },
          });
        }
        const running = async () =>
          (await core.listNamespacedPod({ namespace: 'default' })).items
            .filter((p) => p.status?.phase === 'Running')
            .map((p) => p.spec?.nodeName)
            .sort();
        let onNodes: (string | undefined)[] = [];
        for (let i = 0; i < 90 && onNodes.length < 2; i++) {
          onNodes = await running().catch(() => []);
          if (onNodes.length < 2) await new Promise((r) => setTimeout(r, 1_000));
        }
        expect(onNodes, (await compose('logs', '--no-color', 'images')).stdout).toEqual(nodes);
        // Both runtimes networked their pod from the node's /24 of the cluster CIDR.
        for (const p of (await core.listNamespacedPod({ namespace: 'default' })).items) {
          const node = await core.readNode({ name: p.spec?.nodeName ?? '' });
          const prefix = node.spec?.podCIDR?.replace(/0\/24$/, '') ?? 'no podCIDR';
          expect(p.status?.podIP, `${p.metadata?.name} in ${node.spec?.podCIDR}`).toMatch(
            new RegExp(`^${prefix.replaceAll('.', '\\.')}`),
          );
        }
        // exec and logs go through the apiserver to each agent, which trusts its client certificate.
        const kubeconfigFile = join(await mkdtemp(join(tmpdir(), 'kh-compose-')), 'kubeconfig');
        await writeFile(kubeconfigFile, kc.exportConfig(), { mode: 0o600 });
        const kubectl = (...args: string[]) => run(KUBECTL, ['--kubeconfig', kubeconfigFile, ...args]);
        for (const nodeName of nodes) {
          const pod = `bb-${nodeName}`;
          expect((await kubectl('exec', pod, '--', 'echo', 'exec-ok')).stdout).toBe('exec-ok\n');
          expect((await kubectl('logs', pod)).stdout).toBe(`hello from ${pod}\n`);
        }
        // The header's kubectl lines run as written (each fails the test on a non-zero exit), with
        // the kubeconfig it writes to /tmp/kh.kubeconfig here at a free port.
        const kubectlLines = header.filter((l) => l.startsWith('kubectl --kubeconfig /tmp/kh.kubeconfig '));
        expect(kubectlLines.map((l) => l.split(' ')[3])).toEqual(['run', 'wait', 'exec', 'logs']);
        const answers: string[] = [];
        for (const line of kubectlLines)
          answers.push((await kubectl(...line.split(' ').slice(3))).stdout.trim());
        expect(answers).toEqual(['pod/bb created', 'pod/bb condition met', 'bb', '']);
        // No node holds the admin token; each holds its own node identity, which may not read secrets.
        const adminToken = kc.getCurrentUser()?.token ?? '';
        expect(adminToken).toMatch(/^[0-9a-f]{32}$/);
        for (const nodeName of ['node-containerd', 'node-docker']) {
          // Files holding a token: the node's whole file system but the kernel's, the checkout's
          // dependencies and git.
          const holders = async (token: string) =>
            (
              await compose(
                'exec',
                '-T',
                nodeName,
                'sh',
                '-c',
                `grep -rlsF -D skip --exclude-dir=proc --exclude-dir=sys --exclude-dir=node_modules --exclude-dir=.git '${token}' / || true`,
              )
            ).stdout;
          expect(await holders(adminToken), nodeName).toBe('');
          const [nodeContainer] = await docker.listContainers({
            filters: { label: [...label, `com.docker.compose.service=${nodeName}`] },
          });
          const inspected = await docker.getContainer(nodeContainer?.Id ?? nodeName).inspect();
          expect(inspected.Config.Env.join('\n')).not.toContain(adminToken);
          expect(inspected.Mounts.map((m) => m.Name ?? m.Source).join(' ')).not.toMatch(/kh-apiserver/);
          const nodeToken = (await compose('exec', '-T', nodeName, 'cat', '/node/token')).stdout.trim();
          // The search does see a token where one is: the node's own.
          expect(await holders(nodeToken), nodeName).toContain('/node/token');
          const asNode = (...args: string[]) => kubectl('--token', nodeToken, ...args);
          expect((await asNode('auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}')).stdout).toBe(
            `system:node:${nodeName}`,
          );
          await expect(asNode('get', 'secrets', '-A')).rejects.toThrow(/Forbidden/);
        }
        const containers = await docker.listContainers({ filters: { label } });
        expect(containers.every((c) => c.Labels['kh.owner'] === 'test')).toBe(true);
      } finally {
        await compose('down', '-v', '-t', '5').catch(() => {});
        await removeLeftovers({ runId: stackRun });
      }
      const left = await Promise.all([
        docker.listContainers({ all: true, filters: { label } }),
        docker.listNetworks({ filters: { label } }),
        docker.listVolumes({ filters: { label } }).then((v) => v.Volumes ?? []),
      ]);
      expect(left.map((l) => l.length)).toEqual([0, 0, 0]);
    },
    240_000,
  );
});
