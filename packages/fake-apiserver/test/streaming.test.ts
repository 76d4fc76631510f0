import { spawn } from 'node:child_process';
import { type AddressInfo, connect, createServer, type Server } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { Exec, KubeConfig, type V1Status } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, type Harness, KUBECTL, kubectl, pod, readyNode, startHarness } from './helpers.js';
import { startTestKubelet, type TestKubelet } from './kubelet.js';

/** A command (kubectl unless `kubeconfig` is empty) with stdin piped in; resolves with its exit code and output. */
function kubectlWithInput(bin: string, kubeconfig: string, args: string[], input: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(bin, kubeconfig ? ['--kubeconfig', kubeconfig, ...args] : args, { stdio: 'pipe' });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c;
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c;
    });
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    // kubectl may exit before it reads its input (a refusal): EPIPE is then expected.
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

describe.each([
  ['1.27', KUBECTL.oldest],
  ['1.33', KUBECTL.newest],
])('kubectl %s through the kubelet proxy', (_v, bin) => {
  let h: Harness;
  let kubelet: TestKubelet;
  let echo: Server;

  beforeAll(async () => {
    h = await startHarness({ scheduler: false });
    kubelet = await startTestKubelet(h.server.caPem!);
    echo = createServer((s) => s.pipe(s));
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    const node = readyNode('n');
    node.status.addresses = [{ type: 'InternalIP', address: '127.0.0.1' }];
    node.status.daemonEndpoints = { kubeletEndpoint: { Port: kubelet.port } };
    await h.api.post('/api/v1/nodes', node);
    await h.api.post('/api/v1/namespaces/default/pods', pod('web', { nodeName: 'n' }));
    // kubectl port-forward only goes to Running pods.
    await h.api.patch('/api/v1/namespaces/default/pods/web/status', 'strategic', {
      status: { phase: 'Running' },
    });
    await h.api.post('/api/v1/namespaces/default/pods', pod('pending'));
  });
  afterAll(async () => {
    await h?.stop();
    await kubelet?.close();
    echo?.close();
  });

  it('exec runs the command on the kubelet, with its output and exit code, as the apiserver client', async () => {
    const before = kubelet.requests.length;
    const ok = await kubectl(bin, h.kubeconfigPath, [
      'exec',
      'web',
      '--',
      'sh',
      '-c',
      'echo out; echo err >&2',
    ]);
    expect(ok).toMatchObject({ code: 0, stdout: 'out\n', stderr: 'err\n' });
    const failed = await kubectl(bin, h.kubeconfigPath, ['exec', 'web', '--', 'sh', '-c', 'exit 3']);
    expect(failed.code).toBe(3);
    const last = kubelet.requests.at(-1)!;
    expect(last.url).toBe('/exec/default/web/c?command=sh&command=-c&command=exit+3&output=1&error=1');
    expect(last.cn).toBe('kube-apiserver-kubelet-client');
    // kubectl 1.33 asks for a WebSocket, which the apiserver translates: the kubelet (SPDY only
    // for exec, as containerd is) sees one SPDY session per exec and no refused attempt.
    expect(kubelet.requests.slice(before).map((r) => r.upgrade)).toEqual(['spdy', 'spdy']);
    // The second exec resumes the apiserver's TLS session with the kubelet.
    expect(last.resumed).toBe(true);
  });

  it('exec -i pipes stdin', async () => {
    const piped = await kubectlWithInput(
      bin,
      h.kubeconfigPath,
      ['exec', '-i', 'web', '--', 'wc', '-c'],
      'hello',
    );
    expect(piped).toMatchObject({ code: 0 });
    expect(piped.stdout.trim()).toBe('5');
    expect(kubelet.requests.at(-1)!.url).toBe(
      '/exec/default/web/c?command=wc&command=-c&input=1&output=1&error=1',
    );
  });

  it('exec -it asks for a terminal (kubectl needs one itself: run under script(1))', async () => {
    const cmd = `${bin} --kubeconfig ${h.kubeconfigPath} exec -it web -- sh -c 'echo out; echo err >&2'`;
    const r = await kubectlWithInput('script', '', ['-qec', cmd, '/dev/null'], '');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/out\r?\n/);
    expect(r.stdout).toMatch(/err\r?\n/);
    expect(kubelet.requests.at(-1)!.url).toMatch(/&input=1&output=1&tty=1$/);
  });

  it('attach streams the main process', async () => {
    const r = await kubectlWithInput(bin, h.kubeconfigPath, ['attach', '-i', 'web'], 'abc');
    expect(r.stdout).toContain('attached\nABC');
    expect(kubelet.requests.at(-1)!.url).toBe('/attach/default/web/c?input=1&output=1&error=1');
  });

  it('port-forward reaches the port through the kubelet', async () => {
    const remote = (echo.address() as AddressInfo).port;
    const child = spawn(bin, ['--kubeconfig', h.kubeconfigPath, 'port-forward', 'pod/web', `:${remote}`], {
      stdio: 'pipe',
    });
    try {
      const local = await new Promise<number>((resolve, reject) => {
        let out = '';
        child.stderr.on('data', (c: Buffer) => {
          out += c;
        });
        child.stdout.on('data', (c: Buffer) => {
          out += c;
          const m = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(out);
          if (m) resolve(Number(m[1]));
        });
        child.on('close', () => reject(new Error(`port-forward exited: ${out}`)));
      });
      const s = connect(local, '127.0.0.1');
      s.end('ping');
      let got = '';
      for await (const c of s) got += c;
      expect(got).toBe('ping');
    } finally {
      child.kill();
    }
  });

  it('logs and nodes/proxy go to the kubelet', async () => {
    const logs = await kubectl(bin, h.kubeconfigPath, ['logs', 'web', '--tail=1']);
    expect(logs.stdout).toBe('logs of default/web/c\n');
    expect(kubelet.requests.at(-1)!.url).toBe('/containerLogs/default/web/c?tailLines=1');
    const stats = await kubectl(bin, h.kubeconfigPath, [
      'get',
      '--raw',
      '/api/v1/nodes/n/proxy/stats/summary',
    ]);
    expect(JSON.parse(stats.stdout).node.nodeName).toBe('kubelet-node');
    const missing = await kubectl(bin, h.kubeconfigPath, ['get', '--raw', '/api/v1/nodes/n/proxy/nope']);
    expect(missing.stderr).toContain('NotFound');
  });

  /** A kubectl exec that prints once and then holds its stream open; resolves once it printed. */
  async function startLongExec() {
    const child = spawn(bin, [
      '--kubeconfig',
      h.kubeconfigPath,
      'exec',
      'web',
      '--',
      'sh',
      '-c',
      'echo started; sleep 30',
    ]);
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    return { child, exited };
  }

  it('a client that goes away mid-stream ends the kubelet session and leaves both servers serving', async () => {
    const { child } = await startLongExec();
    child.kill('SIGKILL');
    await eventually(() => expect(kubelet.openStreams()).toBe(0));
    const again = await kubectl(bin, h.kubeconfigPath, ['exec', 'web', '--', 'echo', 'still here']);
    expect(again).toMatchObject({ code: 0, stdout: 'still here\n' });
  });

  it('a kubelet that drops the stream ends kubectl at once, and the apiserver keeps serving', async () => {
    const { exited } = await startLongExec();
    kubelet.dropStreams();
    // kubectl exits (1.27 with 0: its SPDY client takes a closed connection without a status as the end).
    await exited;
    expect((await h.api.get('/healthz')).status).toBe(200);
    const again = await kubectl(bin, h.kubeconfigPath, ['exec', 'web', '--', 'echo', 'still here']);
    expect(again).toMatchObject({ code: 0, stdout: 'still here\n' });
  });

  it('refuses unknown pods and containers, and pods without a node, as kube-apiserver does', async () => {
    const noPod = await kubectl(bin, h.kubeconfigPath, ['exec', 'ghost', '--', 'true']);
    expect(noPod.stderr).toContain('pods "ghost" not found');
    const noContainer = await kubectl(bin, h.kubeconfigPath, ['exec', 'web', '-c', 'x', '--', 'true']);
    expect(noContainer.stderr).toContain('container x is not valid for pod web');
    const pending = await h.api.request('POST', '/api/v1/namespaces/default/pods/pending/exec?command=true');
    expect(pending.status).toBe(400);
    const noUpgrade = await h.api.request('POST', '/api/v1/namespaces/default/pods/web/exec?command=true');
    expect(noUpgrade.status).toBe(400);
    expect(noUpgrade.body.message).toBe('Upgrade request required');
    const noNode = await h.api.get('/api/v1/nodes/ghost/proxy/stats/summary');
    expect(noNode.status).toBe(404);
  });
});

describe('a WebSocket-only client (@kubernetes/client-node Exec) through the kubelet proxy', () => {
  let h: Harness;
  let kubelet: TestKubelet;

  beforeAll(async () => {
    h = await startHarness({ scheduler: false });
    kubelet = await startTestKubelet(h.server.caPem!);
    const node = readyNode('n');
    node.status.addresses = [{ type: 'InternalIP', address: '127.0.0.1' }];
    node.status.daemonEndpoints = { kubeletEndpoint: { Port: kubelet.port } };
    await h.api.post('/api/v1/nodes', node);
    await h.api.post('/api/v1/namespaces/default/pods', pod('web', { nodeName: 'n' }));
  });
  afterAll(async () => {
    await h?.stop();
    await kubelet?.close();
  });

  /** client-node's Exec: output, and the Status its error channel delivered. */
  async function exec(command: string[], input?: string) {
    const kc = new KubeConfig();
    kc.loadFromString(h.server.kubeconfig());
    let out = '';
    let err = '';
    const sink = (append: (s: string) => void) =>
      new Writable({
        write(chunk, _enc, done) {
          append(String(chunk));
          done();
        },
      });
    const status = await new Promise<V1Status>((resolve, reject) => {
      new Exec(kc)
        .exec(
          'default',
          'web',
          'c',
          command,
          sink((s) => {
            out += s;
          }),
          sink((s) => {
            err += s;
          }),
          input === undefined ? null : Readable.from([input]),
          false,
          resolve,
        )
        .catch(reject);
    });
    return { out, err, status };
  }

  it('runs a command with its output, stdin and exit code over a kubelet that speaks only SPDY', async () => {
    const before = kubelet.requests.length;
    const ok = await exec(['sh', '-c', 'echo out; echo err >&2']);
    expect(ok).toMatchObject({ out: 'out\n', err: 'err\n', status: { status: 'Success' } });
    const piped = await exec(['wc', '-c'], 'hello');
    expect(piped.out.trim()).toBe('5');
    const failed = await exec(['sh', '-c', 'exit 3']);
    expect(failed.status).toMatchObject({ status: 'Failure', reason: 'NonZeroExitCode' });
    expect(failed.status.details?.causes).toEqual([{ reason: 'ExitCode', message: '3' }]);
    expect(kubelet.requests.slice(before).map((r) => r.upgrade)).toEqual(['spdy', 'spdy', 'spdy']);
  });

  it("passes the kubelet's failure Status on as the kubelet worded it", async () => {
    const missing = await exec(['/no/such/command']);
    expect(missing.status).toMatchObject({ status: 'Failure', reason: 'InternalError' });
    expect(missing.status.message).toMatch(/^error executing command in container: .*ENOENT/);
  });
});
