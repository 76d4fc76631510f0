import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ctr, type Harness, harnessPerTest, makePod } from './harness.js';

let h: Harness;
harnessPerTest((started) => {
  h = started;
});

describe('runtime identity, status and exec', () => {
  it('reports the runtime name, versions and conditions', async () => {
    expect(h.manager.type()).toBe('fake-cri');
    expect(await h.manager.apiVersion()).toBe('v1');
    expect(await h.manager.version()).toMatch(/\S/);
    h.fake.setNetworkReady(false, 'NetworkPluginNotReady', 'cni config uninitialized');
    const st = await h.manager.status();
    expect(st.conditions).toEqual(
      expect.arrayContaining([
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        {
          type: 'NetworkReady',
          status: false,
          reason: 'NetworkPluginNotReady',
          message: 'cni config uninitialized',
        },
      ]),
    );
  });

  it('runs a command in a container and returns its output and exit code', async () => {
    h.fake.script.execResult('cat /etc/hostname', { stdout: 'web\n', stderr: 'warn', exitCode: 4 });
    const pod = makePod('exec', [ctr('app')]);
    await h.sync(pod);
    const id = (await h.status(pod)).containerStatuses[0]!.id;
    const r = await h.manager.runInContainer(id, ['cat', '/etc/hostname'], 5000);
    expect({ out: r.stdout.toString(), err: r.stderr.toString(), code: r.exitCode }).toEqual({
      out: 'web\n',
      err: 'warn',
      code: 4,
    });
  });
});

describe('httpGet lifecycle hooks', () => {
  let server: Server;
  const hits: string[] = [];
  let port: number;
  let status = 200;
  beforeEach(async () => {
    hits.length = 0;
    server = createServer((req, res) => {
      hits.push(`${req.method} ${req.url} ${req.headers['x-reason'] ?? ''}`);
      res.statusCode = status;
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    await new Promise((r) => server.close(r));
  });

  it('calls preStop httpGet on a named port with headers before stopping', async () => {
    const pod = makePod('http-prestop', [
      ctr('app', {
        ports: [{ name: 'admin', containerPort: port }],
        lifecycle: {
          preStop: {
            httpGet: {
              host: '127.0.0.1',
              port: 'admin',
              path: 'drain',
              httpHeaders: [{ name: 'X-Reason', value: 'bye' }],
            },
          },
        },
      }),
    ]);
    await h.sync(pod);
    await h.manager.killPod(pod, (await h.manager.getPods(false))[0]!);
    expect(hits).toEqual(['GET /drain bye']);
    expect(h.requests('StopContainer')).toHaveLength(1);
  });

  it('fails postStart on an HTTP error status and kills the container', async () => {
    status = 500;
    const pod = makePod('http-poststart', [
      ctr('app', { lifecycle: { postStart: { httpGet: { host: '127.0.0.1', port, path: '/ready' } } } }),
    ]);
    const r = await h.sync(pod);
    expect(hits).toEqual(['GET /ready ']);
    expect(r.steps[1]).toMatchObject({ reason: 'PostStartHookError' });
    expect(r.steps[1]!.message).toMatch(/HTTP lifecycle hook \(\/ready\) .* HTTP status 500/);
    expect((await h.status(pod)).containerStatuses[0]!.state).toBe('exited');
  });
});
