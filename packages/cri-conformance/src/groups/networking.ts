import { Protocol } from '@kh/cri-api';
import { expectContains, expectEqual, expectTrue } from '../framework/assert.js';
import { defineGroup, Skip, waitFor } from '../framework/framework.js';

export const networking = defineGroup('networking', {
  'DNS config is written to resolv.conf': async (ctx) => {
    const pod = await ctx.runPod({
      dnsConfig: { servers: ['10.96.0.10'], searches: ['kh.svc.cluster.local'], options: ['ndots:5'] },
    });
    const id = await ctx.startedContainer(pod, 'dns');
    const r = await ctx.exec(id, ['cat', '/etc/resolv.conf']);
    expectContains(r.stdout, 'nameserver 10.96.0.10', 'resolv.conf');
    expectContains(r.stdout, 'search kh.svc.cluster.local', 'resolv.conf');
    expectContains(r.stdout, 'options ndots:5', 'resolv.conf');
  },

  'hostname is set': async (ctx) => {
    const pod = await ctx.runPod({ hostname: 'kh-conformance-host' });
    const id = await ctx.startedContainer(pod, 'hostname');
    expectEqual((await ctx.exec(id, ['hostname'])).stdout.trim(), 'kh-conformance-host', 'hostname');
  },

  'a pod is reachable from another pod on its IP and container port': async (ctx) => {
    const server = await ctx.runPod({ portMappings: [{ protocol: Protocol.TCP, containerPort: 80 }] });
    await ctx.startedContainer(server, 'web', { image: { image: ctx.options.images.httpd }, command: [] });
    const ip = (await ctx.client.podSandboxStatus({ podSandboxId: server.id })).status?.network?.ip;
    expectTrue(ip, 'the server pod has no IP');
    const client = await ctx.runPod();
    const probe = await ctx.startedContainer(client, 'wget');
    const body = await waitFor(async () => {
      // Plain `wget -O -`: busybox-static's wget crashes with -q or -T on some builds.
      const r = await ctx.exec(probe, ['wget', '-O', '-', `http://${ip}:80/`]);
      return r.exitCode === 0 ? r.stdout : undefined;
    }, `http://${ip}:80/ from another pod`);
    expectTrue(body.length > 0, 'the web pod answered with an empty page');
  },

  'a host port maps to the container port': async (ctx) => {
    if (!ctx.options.hostPortAddress) throw new Skip('no --host-port-address to reach node ports from');
    const hostPort = 30_000 + Math.floor(Math.random() * 2_000);
    const server = await ctx.runPod({
      portMappings: [{ protocol: Protocol.TCP, containerPort: 80, hostPort, hostIp: ctx.options.hostPortIp }],
    });
    await ctx.startedContainer(server, 'web', { image: { image: ctx.options.images.httpd }, command: [] });
    const url = `http://${ctx.options.hostPortAddress}:${hostPort}/`;
    const body = await waitFor(async () => {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      return res.ok ? res.text() : undefined;
    }, `GET ${url}`);
    expectTrue(body.length > 0, `empty page at ${url}`);
  },
});
