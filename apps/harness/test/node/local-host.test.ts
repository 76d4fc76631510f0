import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentPath, NodeAgent } from '../../src/node/agent.js';
import { LocalHost } from '../../src/node/local-host.js';

let dir: string;
const host = new LocalHost();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-local-host-'));
});

afterAll(async () => {
  await host.stopAll();
  await rm(dir, { recursive: true, force: true });
});

describe('LocalHost', () => {
  it('exec returns the exit code and both output streams', async () => {
    expect(await host.exec(['sh', '-c', 'echo out; echo err >&2; exit 3'])).toEqual({
      exitCode: 3,
      output: 'out\nerr\n',
    });
    expect((await host.exec(['/no/such/command'])).exitCode).toBe(-1);
  });

  it('spawn keeps the last lines, and stop ends the process with a signal', async () => {
    const p = await host.spawn(['sh', '-c', 'echo "$KH_GREETING"; exec sleep 60'], {
      name: 'sleeper',
      env: { KH_GREETING: 'hello' },
    });
    await expect.poll(() => p.tail(5)).toEqual(['hello']);
    await p.stop('SIGTERM');
    expect(await p.exited).toBeNull(); // killed by the signal, no exit code
  });

  it('writeFile creates the directories and keeps the file private', async () => {
    const path = join(dir, 'etc/kh/kubeconfig');
    await host.writeFile(path, 'token');
    expect(await readFile(path, 'utf8')).toBe('token');
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });
});

describe('NodeAgent on a shared host', () => {
  it('keeps every file under its directory and runs the command it is given', () => {
    const agent = new NodeAgent(host, {
      nodeName: 'n',
      criEndpoint: 'unix:///run/x.sock',
      kubeconfig: '',
      dir: '/tmp/kh-x',
      command: (args) => ['agent', ...args],
    });
    expect(agent.argv()).toEqual([
      'agent',
      '--kubeconfig=/tmp/kh-x/etc/kh/kubeconfig',
      '--config=/tmp/kh-x/etc/kh/kubelet-config.json',
      '--hostname-override=n',
      '--root-dir=/tmp/kh-x/var/lib/kubelet',
      '--v=2',
      '--cri-call-log=/tmp/kh-x/var/log/kh/cri-calls.jsonl',
    ]);
    expect(agentPath('/etc/kh/kubeconfig')).toBe('/etc/kh/kubeconfig');
  });
});
