import { PassThrough, Writable } from 'node:stream';
import { PortForwardClient, streamRemoteCommand } from '@kh/cri-streaming';
import { expectContains, expectEqual } from '../framework/assert.js';
import {
  AssertionError,
  type CaseContext,
  defineGroup,
  requireSupported,
  Skip,
  waitFor,
} from '../framework/framework.js';

// Exec, Attach and PortForward as kubectl reaches them: the CRI call answers a URL on the runtime's
// streaming server, and @kh/cri-streaming's client (SPDY, what kubelet's proxy speaks) runs the
// session there.

const SESSION_TIMEOUT_MS = 30_000;
const timeout = () => AbortSignal.timeout(SESSION_TIMEOUT_MS);

/** Waits for `done` while the session runs; a session that ends or fails first ends the wait. */
async function until(session: Promise<unknown>, done: () => boolean, what: string): Promise<void> {
  let ended = false;
  const settle = () => {
    ended = true;
  };
  session.then(settle, settle);
  await waitFor(async () => (done() || ended ? true : undefined), what, SESSION_TIMEOUT_MS);
  if (done()) return;
  await session; // the session's own failure says more
  throw new AssertionError(`the session ended before ${what}`);
}

/** One request over a new forwarded connection: what came back, and the error stream's text. */
async function forwardedRequest(
  forward: PortForwardClient,
  port: number,
  request: string,
): Promise<{ text: string; error: string }> {
  const connection = await forward.open(port);
  const response = new Collector();
  const done = new Promise((resolve, reject) => {
    connection.stream.once('end', resolve).once('error', reject);
  });
  connection.stream.pipe(response);
  connection.stream.end(request);
  await done;
  return { text: response.text, error: await connection.error };
}

/** A Writable that keeps what it is given, as text. */
class Collector extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

/** The streaming server must be reachable from this process, or the options say why it is not. */
function requireReachable(ctx: CaseContext): void {
  if (ctx.options.streamingUnreachable) throw new Skip(ctx.options.streamingUnreachable);
}

async function runningContainer(
  ctx: CaseContext,
  extra: Parameters<CaseContext['startedContainer']>[2] = {},
) {
  requireReachable(ctx);
  const pod = await ctx.runPod();
  return { pod, id: await ctx.startedContainer(pod, 'streaming', extra) };
}

export const streaming = defineGroup('streaming', {
  'Exec without a tty: stdout, stderr and the exit code': async (ctx) => {
    const { id } = await runningContainer(ctx);
    const { url } = await requireSupported('Exec', () =>
      ctx.client.exec({
        containerId: id,
        cmd: ['sh', '-c', 'echo to-stdout; echo to-stderr >&2; exit 3'],
        stdout: true,
        stderr: true,
      }),
    );
    const stdout = new Collector();
    const stderr = new Collector();
    const { exitCode } = await streamRemoteCommand(url, {
      stdout,
      stderr,
      signal: timeout(),
    });
    expectEqual(
      { exitCode, stdout: stdout.text, stderr: stderr.text },
      {
        exitCode: 3,
        stdout: 'to-stdout\n',
        stderr: 'to-stderr\n',
      },
      'exec session',
    );
  },

  'Exec with a tty and stdin: the command reads a line and answers on the terminal': async (ctx) => {
    const { id } = await runningContainer(ctx);
    // Not an interactive shell: its line editor flushes input that arrived before its prompt.
    const { url } = await requireSupported('Exec', () =>
      ctx.client.exec({
        containerId: id,
        cmd: ['sh', '-c', 'read line; echo "kh-$((40+2)) $line"; exit 7'],
        tty: true,
        stdin: true,
        stdout: true,
      }),
    );
    const terminal = new Collector();
    const stdin = new PassThrough();
    const session = streamRemoteCommand(url, { stdin, stdout: terminal, tty: true, signal: timeout() });
    stdin.write('hello\n');
    // stdin stays open until the answer is there, as a terminal's would.
    await until(session, () => terminal.text.includes('kh-42 hello'), 'the answer on the terminal');
    stdin.end();
    const { exitCode } = await session;
    // The terminal echoes the input (with \r\n) before the answer, which the shell computed.
    expectContains(terminal.text, 'kh-42 hello\r\n', 'what the terminal showed');
    expectEqual(exitCode, 7, 'exit code of the tty session');
  },

  "Attach: stdin reaches the container's process and its stdout and stderr come back": async (ctx) => {
    const { id } = await runningContainer(ctx, {
      command: [
        'sh',
        '-c',
        'while read line; do [ "$line" = bye ] && exit 0; echo "out $line"; echo "err $line" >&2; done',
      ],
      stdin: true,
    });
    const { url } = await requireSupported('Attach', () =>
      ctx.client.attach({ containerId: id, stdin: true, stdout: true, stderr: true }),
    );
    const stdout = new Collector();
    const stderr = new Collector();
    const stdin = new PassThrough();
    const session = streamRemoteCommand(url, { stdin, stdout, stderr, signal: timeout() });
    // What the process prints before the runtime has joined the session's streams is not replayed
    // (kubectl attach has the same gap): repeat the line until its answer comes back.
    const repeat = setInterval(() => stdin.write('kh-attach\n'), 500);
    try {
      stdin.write('kh-attach\n');
      await until(
        session,
        () => stdout.text.includes('out kh-attach\n') && stderr.text.includes('err kh-attach\n'),
        'the answers on stdout and stderr',
      );
    } finally {
      clearInterval(repeat);
    }
    stdin.end('bye\n');
    expectEqual((await session).exitCode, 0, 'exit code of the attach session');
  },

  "PortForward: a connection reaches the pod's port": async (ctx) => {
    const { pod } = await runningContainer(ctx, { image: { image: ctx.options.images.httpd }, command: [] });
    const { url } = await requireSupported('PortForward', () =>
      ctx.client.portForward({ podSandboxId: pod.id, port: [80] }),
    );
    const forward = await PortForwardClient.connect(url, { signal: timeout() });
    // Running is not listening yet: the server binds its port just after its container starts,
    // and a connection before that is refused and ends empty. critest asks again until it
    // answers; so does this, with a new connection each time, and judges the last answer.
    let answer = { text: '', error: '' };
    try {
      await waitFor(
        async () => {
          answer = await forwardedRequest(forward, 80, 'GET /healthz HTTP/1.0\r\n\r\n');
          return answer.text === '' ? undefined : true;
        },
        'an answer through the forwarded port',
        SESSION_TIMEOUT_MS,
      ).catch(() => undefined);
    } finally {
      await forward.close();
    }
    expectContains(answer.text, ' 200 ', 'HTTP status through the forwarded port');
    expectContains(answer.text, '\r\n\r\nok\n', 'HTTP body through the forwarded port');
    expectEqual(answer.error, '', 'error stream of the forwarded connection');
  },
});
