/**
 * The dockershim's StreamingRuntime on its own, against the host dockerd: what reaches the
 * container and what is left behind, observed from Docker's side (`docker top`, /proc) rather
 * than through a client.
 */
import { readdir, readFile } from 'node:fs/promises';
import { Duplex, PassThrough, Writable } from 'node:stream';
import { FailedPreconditionError, NotFoundError } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DIALER_NAME, DockerStreamingRuntime } from '../src/core/container_streaming.js';
import { docker, ShimHarness, waitFor } from './harness.js';
import { awaitSize, hostNetworkHttpd, processes, Sink, Sizes } from './streaming_helpers.js';

const h = new ShimHarness();
let runtime: DockerStreamingRuntime;
let pod: { podId: string; config: Awaited<ReturnType<ShimHarness['runPod']>>['config'] };
let sleeper: string;

beforeAll(async () => {
  await h.start();
  runtime = new DockerStreamingRuntime(h.shim.context);
  pod = await h.runPod();
  sleeper = await h.runContainer(pod.podId, pod.config, 'sleeper');
});
afterAll(async () => {
  runtime?.close();
  await h.cleanup();
});

describe('exec', () => {
  it('separates stdout and stderr and reports the exit code', async () => {
    const stdout = new Sink();
    const stderr = new Sink();
    const r = await runtime.exec(
      sleeper,
      ['sh', '-c', 'echo out; echo err >&2; exit 3'],
      { stdout, stderr, tty: false },
      new AbortController().signal,
    );
    expect(r.exitCode).toBe(3);
    expect(stdout.text).toBe('out\n');
    expect(stderr.text).toBe('err\n');
  });

  it("streams output larger than Docker's reads to a slow reader, whole and in order", async () => {
    // A reader that takes one small chunk per turn: Docker's connection must wait for it (no
    // output is dropped or buffered without bound) while frames straddle its reads.
    const chunks: Buffer[] = [];
    const stdout = new Writable({
      highWaterMark: 1024,
      write(chunk: Buffer, _enc, done) {
        chunks.push(Buffer.from(chunk));
        setImmediate(done);
      },
    });
    const stderr = new Sink();
    const r = await runtime.exec(
      sleeper,
      ['sh', '-c', 'echo start >&2; seq 1 100000; echo end >&2'],
      { stdout, stderr, tty: false },
      new AbortController().signal,
    );
    expect(r.exitCode).toBe(0);
    const want = `${Array.from({ length: 100_000 }, (_, i) => i + 1).join('\n')}\n`;
    expect(Buffer.concat(chunks).toString()).toBe(want);
    expect(stderr.text).toBe('start\nend\n');
  });

  it('passes stdin through and closes it when the client ends it', async () => {
    const stdin = new PassThrough();
    const stdout = new Sink();
    const done = runtime.exec(
      sleeper,
      ['sh', '-c', 'wc -c'],
      { stdin, stdout, tty: false },
      new AbortController().signal,
    );
    stdin.end(Buffer.alloc(300_000, 'x'));
    expect((await done).exitCode).toBe(0);
    expect(stdout.text.trim()).toBe('300000');
  });

  it('resizes the terminal while the command runs', async () => {
    const stdin = new PassThrough();
    const stdout = new Sink();
    const resize = new Sizes();
    resize.push({ width: 100, height: 40 });
    const done = runtime.exec(
      sleeper,
      ['sh'],
      { stdin, stdout, tty: true, resize },
      new AbortController().signal,
    );
    // The shell reads the size when asked; the first resize races the start, so wait for it.
    stdin.write(awaitSize('first', 40, 100));
    await waitFor(async () => (stdout.text.includes('first-40x100') ? true : undefined), 'first size');
    resize.push({ width: 132, height: 50 });
    stdin.write(awaitSize('second', 50, 132));
    stdin.write('exit 4\n');
    expect((await done).exitCode).toBe(4);
    expect(stdout.text).toContain('second-50x132');
  });

  it('kills the command and everything it started when the client goes away', async () => {
    const stdout = new Sink();
    const abort = new AbortController();
    const done = runtime.exec(
      sleeper,
      ['sh', '-c', 'sleep 1001 & sleep 1002; echo never'],
      { stdout, tty: false },
      abort.signal,
    );
    await waitFor(
      async () => ((await processes(sleeper)).some((p) => p.includes('sleep 1002')) ? true : undefined),
      'exec running',
    );
    abort.abort(new Error('client went away'));
    await expect(done).rejects.toThrow('client went away');
    // A child killed after its shell is reparented to PID 1, here `sleep`, which never reaps it:
    // it stays a zombie (`[sleep] <defunct>`), dead but listed. Only live processes count.
    const left = (await processes(sleeper)).filter((p) => !p.endsWith('<defunct>'));
    expect(left.filter((p) => /sleep 100[12]|sh -c/.test(p))).toEqual([]);
    expect(left).toEqual(['sleep 3600']);
  });

  it('ExecSync past its timeout also kills what the command started', async () => {
    await expect(
      h.client.execSync({ containerId: sleeper, cmd: ['sh', '-c', 'sleep 1003 & sleep 1004'], timeout: 1n }),
    ).rejects.toThrow(/timed out/);
    expect(await processes(sleeper)).toEqual(['sleep 3600']);
  });

  it('is FAILED_PRECONDITION on a stopped container and NOT_FOUND on an unknown one', async () => {
    const stopped = await h.runContainer(pod.podId, pod.config, 'stopped', { command: ['true'] });
    await waitFor(
      async () => ((await docker.getContainer(stopped).inspect()).State.Running ? undefined : true),
      'exit',
    );
    const io = { stdout: new Sink(), tty: false };
    await expect(runtime.exec(stopped, ['true'], io, new AbortController().signal)).rejects.toBeInstanceOf(
      FailedPreconditionError,
    );
    await expect(runtime.exec('nope', ['true'], io, new AbortController().signal)).rejects.toBeInstanceOf(
      NotFoundError,
    );
  });
});

describe('attach', () => {
  it('reaches the main process of a stdin+tty container, resizes it, and ends when it exits', async () => {
    const c = await h.runContainer(pod.podId, pod.config, 'shell', {
      command: ['sh'],
      stdin: true,
      tty: true,
    });
    const stdin = new PassThrough();
    const stdout = new Sink();
    const resize = new Sizes();
    resize.push({ width: 90, height: 30 });
    const done = runtime.attach(c, { stdin, stdout, tty: true, resize }, new AbortController().signal);
    stdin.write(awaitSize('attached', 30, 90));
    await waitFor(async () => (stdout.text.includes('attached-30x90') ? true : undefined), 'attached output');
    stdin.write('exit\n');
    await done;
    expect((await docker.getContainer(c).inspect()).State.Running).toBe(false);
  });

  it('detaches without stopping the container when the client goes away', async () => {
    const c = await h.runContainer(pod.podId, pod.config, 'printer', {
      command: ['sh', '-c', 'while true; do echo tick; sleep 0.1; done'],
    });
    const stdout = new Sink();
    const stderr = new Sink();
    const abort = new AbortController();
    const done = runtime.attach(c, { stdout, stderr, tty: false }, abort.signal);
    await waitFor(async () => (stdout.text.includes('tick\n') ? true : undefined), 'output');
    abort.abort();
    await done;
    expect((await docker.getContainer(c).inspect()).State.Running).toBe(true);
  });

  it('is FAILED_PRECONDITION on a container that is not running', async () => {
    const c = await h.runContainer(pod.podId, pod.config, 'created', {}, false);
    await expect(
      runtime.attach(c, { stdout: new Sink(), tty: false }, new AbortController().signal),
    ).rejects.toThrow(/not running/);
  });
});

/** A Duplex standing for one port-forward data stream: what the test writes goes to the pod. */
function forwardStream() {
  const toPod = new PassThrough();
  const fromPod = new Sink();
  let ended!: () => void;
  const podEnded = new Promise<void>((r) => {
    ended = r;
  });
  const stream = new Duplex({
    read() {},
    write(chunk, _enc, done) {
      fromPod.write(chunk, done);
    },
    final(done) {
      ended();
      done();
    },
  });
  toPod.on('data', (b) => stream.push(b));
  toPod.on('end', () => stream.push(null));
  return { stream, toPod, fromPod, podEnded };
}

describe('portForward', () => {
  let web: Awaited<ReturnType<ShimHarness['runPod']>>;
  beforeAll(async () => {
    web = await h.runPod();
    await h.runContainer(web.podId, web.config, 'web', { image: { image: h.images.httpd }, command: [] });
  });

  /** One HTTP/1.0 GET through a port-forward stream: the request's end half-closes towards the pod. */
  async function get(podId: string, port: number, through = runtime): Promise<string> {
    const f = forwardStream();
    const done = through.portForward(podId, port, f.stream, new AbortController().signal);
    f.toPod.end('GET / HTTP/1.0\r\n\r\n');
    await done;
    await f.podEnded;
    return f.fromPod.text;
  }

  it('connects to localhost in a pod network namespace, one connection after another', async () => {
    for (let i = 0; i < 3; i++) {
      const text = await waitFor(() => get(web.podId, 80).catch(() => undefined), 'httpd answering');
      expect(text).toMatch(/^HTTP\/1\.[01] 200/);
      expect(text).toContain('kubelet-harness');
    }
  });

  it('reaches a host-network pod listening on 127.0.0.1 only', async () => {
    const hostWeb = await hostNetworkHttpd(h);
    const text = await waitFor(
      () => get(hostWeb.podId, hostWeb.port).catch(() => undefined),
      'httpd answering',
    );
    expect(text).toContain('kubelet-harness');
  });

  it('says why when nothing listens, and NOT_FOUND for an unknown sandbox', async () => {
    await expect(get(web.podId, 81)).rejects.toThrow(
      /cannot connect to port 81 in the network namespace of pod sandbox .*ECONNREFUSED 127\.0\.0\.1:81/,
    );
    await expect(get('nope', 80)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('closes the pod-side connection when the client goes away', async () => {
    const established = async () => {
      const r = await h.client.execSync({ containerId: await webContainer(), cmd: ['netstat', '-tn'] });
      return r.stdout
        .toString()
        .split('\n')
        .filter((l) => /127\.0\.0\.1:80 +\S+ +ESTABLISHED/.test(l)).length;
    };
    const abort = new AbortController();
    const f = forwardStream();
    const done = runtime.portForward(web.podId, 80, f.stream, abort.signal);
    f.toPod.write('GET / HTTP/1.0\r\n'); // httpd waits for the rest of the request
    await waitFor(async () => ((await established()) === 1 ? true : undefined), 'the connection in the pod');
    abort.abort();
    await done;
    await waitFor(async () => ((await established()) === 0 ? true : undefined), 'the connection to close');
  });

  it('close() ends the dialer processes (one per pod used so far)', async () => {
    expect((await dialers()).length).toBe(2);
    runtime.close();
    await waitFor(async () => ((await dialers()).length === 0 ? true : undefined), 'dialers to exit');
  });

  async function webContainer(): Promise<string> {
    const { containers } = await h.client.listContainers({ filter: { podSandboxId: web.podId } });
    return containers[0]?.id as string;
  }
});

/** This process's children that are port-forward dialers (nsenter, then node, in a pod's netns). */
async function dialers(): Promise<number[]> {
  const tasks = await readdir(`/proc/${process.pid}/task`);
  const children = (
    await Promise.all(tasks.map((t) => readFile(`/proc/${process.pid}/task/${t}/children`, 'utf8')))
  ).flatMap((l) => l.split(' ').filter(Boolean).map(Number));
  const cmdlines = await Promise.all(
    children.map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')),
  );
  return children.filter((_, i) => cmdlines[i]?.includes(DIALER_NAME));
}
