#!/usr/bin/env node
// Runs inside a node container (the streaming benchmark copies nothing: /opt/kh is the checkout).
// Times one exec round trip of `true` two ways with the same client code, alternating:
//   runtime    CRI Exec on the runtime's socket, then SPDY to the URL it returns (what crictl does)
//   apiserver  SPDY to pods/<pod>/exec on the apiserver, through the agent to the same runtime
// so that the ratio is what the apiserver and the agent add, not what starting a client process
// costs. Prints one JSON line: { runtimeMs: number[], apiserverMs: number[] }.
import { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { CriClient } from '@kh/cri-api';
import { streamRemoteCommand } from '@kh/cri-streaming';

const { values: o } = parseArgs({
  options: {
    endpoint: { type: 'string' },
    container: { type: 'string' },
    apiserver: { type: 'string' },
    'ca-data': { type: 'string' },
    token: { type: 'string' },
    namespace: { type: 'string' },
    pod: { type: 'string' },
    samples: { type: 'string', default: '15' },
  },
});
const need = (k: keyof typeof o) => {
  const v = o[k];
  if (typeof v !== 'string' || v === '') throw new Error(`--${k} is required`);
  return v;
};

const sink = () =>
  new Writable({
    write(_c, _e, done) {
      done();
    },
  });

async function main(): Promise<void> {
  const cri = await CriClient.connect(need('endpoint'));
  const ca = Buffer.from(need('ca-data'), 'base64').toString('utf8');
  const execUrl =
    `${need('apiserver')}/api/v1/namespaces/${need('namespace')}/pods/${need('pod')}/exec` +
    '?command=true&stdout=true&stderr=true';
  const dial = { ca, headers: { Authorization: `Bearer ${need('token')}` } };
  const viaRuntime = async () => {
    const { url } = await cri.exec({
      containerId: need('container'),
      cmd: ['true'],
      stdout: true,
      stderr: true,
    });
    return streamRemoteCommand(url, { stdout: sink(), stderr: sink() });
  };
  const viaApiserver = () => streamRemoteCommand(execUrl, { dial, stdout: sink(), stderr: sink() });
  const runtimeMs: number[] = [];
  const apiserverMs: number[] = [];
  try {
    // One untimed round each: the first call pays for connections and JIT.
    await viaRuntime();
    await viaApiserver();
    for (let i = 0; i < Number(o.samples); i++) {
      for (const [run, out] of [
        [viaRuntime, runtimeMs],
        [viaApiserver, apiserverMs],
      ] as const) {
        const t0 = performance.now();
        const { exitCode } = await run();
        if (exitCode !== 0) throw new Error(`exec of true exited with ${exitCode}`);
        out.push(performance.now() - t0);
      }
    }
  } finally {
    cri.close();
  }
  process.stdout.write(`${JSON.stringify({ runtimeMs, apiserverMs })}\n`);
}

main().catch((err: Error) => {
  process.stderr.write(`exec-probe: ${err.message}\n`);
  process.exit(1);
});
