// The kubectl runner with the real kubectl 1.33 binary and a kubeconfig naming a closed port:
// exit codes come back as they are, with and without a pseudo-terminal, and a kubectl left
// running is stopped.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKubectl, startKubectl } from '../../src/support/kubectl.js';

let dir = '';
let kubeconfig = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-kubectl-test-'));
  kubeconfig = await writeKubeconfig('kubeconfig', 'http://127.0.0.1:1');
});

/** A kubeconfig in the test's directory naming `server`, without credentials. */
async function writeKubeconfig(name: string, server: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server } }],
      users: [{ name: 'u', user: {} }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    }),
  );
  return file;
}
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('runKubectl', () => {
  it('returns what kubectl wrote and its exit code', async () => {
    const ok = await runKubectl(kubeconfig, ['version', '--client', '-o', 'json']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout).clientVersion.minor).toBe('33');
    const bad = await runKubectl(kubeconfig, ['no-such-verb']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^Error: /);
  });

  it('runs kubectl on a terminal with tty and keeps its exit code and arguments intact', async () => {
    const r = await runKubectl(kubeconfig, ['get', 'pods', "--selector=a in (it's)"], {
      tty: true,
      timeoutMs: 20_000,
    });
    expect(r.code).toBe(1);
    // On a terminal stderr and stdout are one stream; the refused connection is kubectl's own error.
    expect(r.stdout).toContain('127.0.0.1:1');
  });
});

describe('runKubectl past its timeout', () => {
  // An apiserver that accepts connections and never answers: kubectl waits on its request.
  let server: Server;
  const sockets: Socket[] = [];
  let silent = '';
  beforeAll(async () => {
    server = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    silent = await writeKubeconfig('silent', `http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  // A timed-out kubectl under `script` used to come back as exit 0 with no output.
  it.each([false, true])('says it timed out and where kubectl waited (tty %s)', async (tty) => {
    const r = await runKubectl(silent, ['get', 'pods'], { tty, timeoutMs: 3_000 });
    expect(r.timedOut).toBe(true);
    expect(r.code).toBe(-1);
    expect(r.stderr).toMatch(/kubectl did not exit within 3 s; waiting in:\n\[[^\]]+\] /);
    // The dump is summed up: client-go's request frames, not the whole trace.
    expect(r.stderr).toMatch(/rest\.\(\*Request\)/);
    expect(`${r.stdout}${r.stderr}`).not.toContain('SIGABRT');
  });
});

describe('startKubectl', () => {
  it('stops a kubectl that keeps running', async () => {
    const p = startKubectl(kubeconfig, ['proxy', '--port=0']);
    await expect.poll(() => p.stdout(), { timeout: 10_000 }).toContain('Starting to serve on 127.0.0.1:');
    const r = await p.stop();
    expect(r.stdout).toContain('Starting to serve');
  });
});
