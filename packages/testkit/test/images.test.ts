import { get as httpsGet } from 'node:https';
import { Client, credentials, status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { demuxBuffer } from '@kh/apimachinery';
import type { StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { KhContainer } from '../src/containers/kh-container.js';
import { khLabels, runId } from '../src/containers/labels.js';
import { removeLeftovers } from '../src/containers/leftovers.js';
import { ensureImages, type ImageRefs, imageRefFor } from '../src/images/ensure.js';
import { DEFAULT_NODE_RELEASE, IMAGE_NAMES, nodeImageName } from '../src/images/recipes.js';
import { docker } from '../src/util/docker.js';

let refs: ImageRefs;
const started: StartedTestContainer[] = [];

beforeAll(async () => {
  refs = await ensureImages(IMAGE_NAMES, { progress: (l) => console.log(l) });
});

afterAll(async () => {
  for (const c of started) await c.stop().catch(() => {});
  await removeLeftovers({ runId });
});

async function run(
  image: string,
  env: Record<string, string> = {},
  cmd?: string[],
): Promise<StartedTestContainer> {
  const container = new KhContainer(image).withLabels(khLabels('image-test')).withEnvironment(env);
  const c = await (cmd ? container.withCommand(cmd) : container).start();
  started.push(c);
  return c;
}

/**
 * Runs `image` to completion and returns its output; `noNewPrivs` is what
 * allowPrivilegeEscalation: false asks a runtime for.
 */
async function runToEnd(
  image: string,
  opts: { user?: string; cmd?: string[]; noNewPrivs?: boolean } = {},
): Promise<string> {
  const c = await docker().createContainer({
    Image: image,
    ...(opts.user ? { User: opts.user } : {}),
    ...(opts.cmd ? { Cmd: opts.cmd } : {}),
    Labels: khLabels('image-test'),
    HostConfig: { SecurityOpt: opts.noNewPrivs ? ['no-new-privileges'] : [] },
  });
  try {
    await c.start();
    const { StatusCode } = (await c.wait()) as { StatusCode: number };
    const raw = (await c.logs({ stdout: true, stderr: true })) as unknown as Buffer;
    // Without a TTY the Engine frames each write with a stream header.
    const logs = demuxBuffer(raw)
      .map((f) => f.payload.toString('utf8'))
      .join('');
    expect(StatusCode, logs).toBe(0);
    return logs;
  } finally {
    await c.remove({ force: true });
  }
}

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('ensureImages', () => {
  test('builds every recipe into the host engine, tagged with its content hash', async () => {
    for (const name of IMAGE_NAMES) {
      const ref = refs[name];
      expect(ref).toBe(await imageRefFor(name));
      const info = await docker().getImage(ref).inspect();
      // `node` is the default release's image under a second name.
      const recipe = name === 'node' ? nodeImageName(DEFAULT_NODE_RELEASE) : name;
      expect(info.Config.Labels).toMatchObject({ 'kh.recipe': recipe, 'kh.recipe.hash': ref.split(':')[1] });
    }
  });

  test('a second run builds nothing: every image is a cache hit', async () => {
    const lines: string[] = [];
    const again = await ensureImages(IMAGE_NAMES, { progress: (l) => lines.push(l) });
    expect(again).toEqual(refs);
    expect(lines).toHaveLength(IMAGE_NAMES.length);
    for (const line of lines) expect(line).toMatch(/\(cached\)$/);
  });

  test('rejects an unknown image name', async () => {
    await expect(ensureImages(['nope' as never])).rejects.toThrow(/Unknown image "nope"/);
  });
});

describe('image behaviour', () => {
  test('busybox has a shell and the applets', async () => {
    const c = await run(refs.busybox, {}, ['sleep', '600']);
    const r = await c.exec(['sh', '-c', 'echo $((6 * 7)); wget --help 2>&1 | head -1']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/^42\nBusyBox v/);
  });

  test('pause exits 0 on SIGTERM instead of waiting to be killed', async () => {
    const c = await run(refs.pause);
    // The shell sets its trap before it starts the sleep; a SIGTERM that came earlier would meet
    // PID 1 without a handler, which ignores it (a CI run under load caught that window).
    await until(
      () => c.exec(['ps', '-o', 'args']),
      (r) => r.stdout.includes('sleep 2147483647'),
    );
    await docker().getContainer(c.getId()).stop({ t: 20 });
    const info = await docker().getContainer(c.getId()).inspect();
    expect(info.State.ExitCode).toBe(0);
  });

  test('httpd serves /healthz with 200 until /www/healthz is removed', async () => {
    const c = await run(refs.httpd);
    const probe = () => c.exec(['wget', '-q', '-O', '-', 'http://127.0.0.1/healthz']);
    const ok = await until(probe, (r) => r.exitCode === 0);
    expect(ok.stdout).toBe('ok\n');
    await c.exec(['rm', '/www/healthz']);
    const failing = await probe();
    expect(failing.exitCode).not.toBe(0);
    expect(failing.output).toMatch(/404/);
  });

  test('memhog grows to MEMHOG_MB and holds it', async () => {
    const c = await run(refs.memhog, { MEMHOG_MB: '48', MEMHOG_STEP_MB: '16', MEMHOG_INTERVAL_S: '0' });
    const logs = await until(
      async () => (await docker().getContainer(c.getId()).logs({ stdout: true, stderr: true })).toString(),
      (l) => l.includes('reached'),
    );
    expect(logs).toContain('memhog: reached 48 MiB, holding');
    const stats = (await docker().getContainer(c.getId()).stats({ stream: false })) as {
      memory_stats: { usage: number };
    };
    expect(stats.memory_stats.usage).toBeGreaterThan(48 * 1024 * 1024);
  });

  test('nonroot runs as its image user, 1234, unless told otherwise', async () => {
    expect((await docker().getImage(refs.nonroot).inspect()).Config.User).toBe('1234');
    expect(await runToEnd(refs.nonroot, { cmd: ['id', '-u'] })).toBe('1234\n');
  });

  test("nonewprivs' setuid-root nnp gains root as uid 1000, and does not under no_new_privs", async () => {
    expect(await runToEnd(refs.nonewprivs, { user: '1000' })).toBe('Real uid: 1000\nEffective uid: 0\n');
    expect(await runToEnd(refs.nonewprivs, { user: '1000', noNewPrivs: true })).toBe(
      'Real uid: 1000\nEffective uid: 1000\n',
    );
  });

  test("usergroups' uid 1000 gets group 50000 from the image's /etc/group", async () => {
    expect(await runToEnd(refs.usergroups, { user: '1000', cmd: ['id', '-G'] })).toBe('1000 50000\n');
  });

  test('entrypoint runs ENTRYPOINT /agnhost with CMD pause, and prints its argv as entrypoint-tester', async () => {
    const config = (await docker().getImage(refs.entrypoint).inspect()).Config;
    expect([config.Entrypoint, config.Cmd]).toEqual([['/agnhost'], ['pause']]);
    expect(await runToEnd(refs.entrypoint, { cmd: ['entrypoint-tester', 'override', 'arguments'] })).toBe(
      '[/agnhost entrypoint-tester override arguments]\n',
    );
    const c = await run(refs.entrypoint, {});
    const logs = await until(
      async () => (await docker().getContainer(c.getId()).logs({ stdout: true, stderr: true })).toString(),
      (l) => l.includes('Paused'),
    );
    expect(logs).toContain('Paused');
  });

  test("netexec answers /echo and /dial as agnhost's netexec does and logs each request line", async () => {
    const c = await run(refs.netexec, {}, ['netexec', '--http-port', '8080', '--udp-port', '-1']);
    const echo = await until(
      () => c.exec(['curl', 'http://127.0.0.1:8080/echo?msg=poststart']),
      (r) => r.exitCode === 0,
    );
    expect(echo.stdout).toBe('poststart');
    const dial = await c.exec([
      'curl',
      'http://127.0.0.1:8080/dial?host=127.0.0.1&port=8080&request=echo%3Fmsg%3Dprestop',
    ]);
    expect(dial.stdout).toBe('{"responses":["prestop"]}');
    expect(
      (await c.exec(['curl', 'http://127.0.0.1:8080/dial?host=127.0.0.1&port=1&request=echo'])).exitCode,
    ).not.toBe(0);
    const logs = (await docker().getContainer(c.getId()).logs({ stdout: true, stderr: true })).toString();
    expect(logs).toMatch(/GET \/echo\?msg=poststart/);
    expect(logs).toMatch(/GET \/echo\?msg=prestop/);
  });

  test("netexec's liveness answers /healthz and /redirect as agnhost's liveness does, in its own process", async () => {
    const c = await run(refs.netexec, {}, ['liveness']);
    const get = (path: string) => c.exec(['wget', '-S', '-q', '-O', '-', `http://127.0.0.1:8080${path}`]);
    const healthz = await until(
      () => get('/healthz'),
      (r) => r.exitCode === 0,
    );
    expect(healthz.stdout).toBe('ok');
    const redirect = await get(`/redirect?loc=${encodeURIComponent('http://0.0.0.0/')}`);
    expect(redirect.stderr).toMatch(/HTTP\/1\.1 302 Found/);
    expect(redirect.stderr).toMatch(/Location: http:\/\/0\.0\.0\.0\//);
    expect((await get('/redirect?loc=%zz')).stderr).toMatch(/400 Bad Request/);
    expect((await get('/nothing')).stderr).toMatch(/404 Not Found/);
    // Nothing but the server runs: no shell or httpd forks a child per request.
    expect((await c.exec(['ps', '-o', 'comm'])).stdout.trim().split('\n').slice(1).sort()).toEqual([
      'liveness',
      'ps',
    ]);
    // After its first 10 s, /healthz fails with 500, as agnhost's does (upstream's restart cases rely on it).
    const failing = await until(
      () => get('/healthz'),
      (r) => /500 Internal Server Error/.test(r.stderr),
      20_000,
    );
    expect(failing.stderr).toMatch(/500 Internal Server Error/);
  });

  test("netexec serves HTTPS with agnhost's localhost pair when given --tls-cert-file", async () => {
    const c = await run(refs.netexec, {}, [
      'netexec',
      '--udp-port',
      '-1',
      '--tls-cert-file',
      '/localhost.crt',
      '--tls-private-key-file',
      '/localhost.key',
    ]);
    // From the host, as a kubelet calls it: TLS without verifying the self-signed certificate.
    const ip = Object.values((await docker().getContainer(c.getId()).inspect()).NetworkSettings.Networks)[0]
      ?.IPAddress;
    const get = () =>
      new Promise<string>((resolve) => {
        const req = httpsGet(`https://${ip}:8080/echo?msg=tls`, { rejectUnauthorized: false }, (res) => {
          let body = '';
          res.on('data', (d: Buffer) => {
            body += d.toString();
          });
          res.on('end', () => resolve(body));
        });
        req.on('error', () => resolve(''));
      });
    expect(await until(get, (body) => body === 'tls')).toBe('tls');
  });

  test("netexec's grpc-health-checking answers the gRPC health service as agnhost's does", async () => {
    const plain = await run(refs.netexec, {}, ['grpc-health-checking']);
    const delayed = await run(refs.netexec, {}, [
      'grpc-health-checking',
      '--port',
      '5001',
      '--service',
      'liveness',
      '--delay-unhealthy-sec',
      '2',
    ]);
    const ipOf = async (c: StartedTestContainer) =>
      Object.values((await docker().getContainer(c.getId()).inspect()).NetworkSettings.Networks)[0]
        ?.IPAddress;
    const plainHealth = healthClient(`${await ipOf(plain)}:5000`);
    const delayedHealth = healthClient(`${await ipOf(delayed)}:5001`);
    try {
      // From the host, as a kubelet's gRPC probe asks: no service name is the server's overall health.
      expect(
        await until(
          () => plainHealth.check(''),
          (r) => r === 'SERVING',
        ),
      ).toBe('SERVING');
      expect(await plainHealth.check('other')).toBe('code 5 (NOT_FOUND): unknown service');
      // The HTTP port forces the answer either way.
      expect((await plain.exec(['curl', 'http://127.0.0.1:8080/make-not-serving'])).exitCode).toBe(0);
      expect(await plainHealth.check('')).toBe('NOT_SERVING');
      expect((await plain.exec(['curl', 'http://127.0.0.1:8080/make-serving'])).exitCode).toBe(0);
      expect(await plainHealth.check('')).toBe('SERVING');
      // --service names the one it answers; --delay-unhealthy-sec turns it NOT_SERVING after that.
      expect(await delayedHealth.check('')).toBe('code 5 (NOT_FOUND): unknown service');
      expect(
        await until(
          () => delayedHealth.check('liveness'),
          (r) => r === 'NOT_SERVING',
          10_000,
        ),
      ).toBe('NOT_SERVING');
    } finally {
      plainHealth.close();
      delayedHealth.close();
    }
  });

  test('diskhog writes DISKHOG_MB into DISKHOG_DIR and holds it', async () => {
    const c = await run(refs.diskhog, {
      DISKHOG_MB: '24',
      DISKHOG_STEP_MB: '8',
      DISKHOG_INTERVAL_S: '0',
      DISKHOG_DIR: '/data',
    });
    const du = await until(
      () => c.exec(['du', '-sm', '/data']),
      (r) => Number.parseInt(r.stdout, 10) >= 24,
    );
    expect(Number.parseInt(du.stdout, 10)).toBeGreaterThanOrEqual(24);
    expect((await c.exec(['ls', '/data'])).stdout.trim().split('\n')).toHaveLength(3);
  });
});

/**
 * A grpc.health.v1 client with the two messages encoded by hand (each one field: 1, the service
 * name; 1, the status enum), so the test needs no .proto: `check` says the status's name, or the
 * gRPC error's code and message.
 */
function healthClient(address: string) {
  const client = new Client(address, credentials.createInsecure());
  const statuses = ['UNKNOWN', 'SERVING', 'NOT_SERVING', 'SERVICE_UNKNOWN'];
  const encode = (service: string) => {
    const name = Buffer.from(service);
    return name.length === 0 ? Buffer.alloc(0) : Buffer.concat([Buffer.from([0x0a, name.length]), name]);
  };
  const decode = (b: Buffer) => statuses[b[0] === 0x08 ? (b[1] ?? 0) : 0] ?? `status ${b[1]}`;
  return {
    check: (service: string) =>
      new Promise<string>((resolve) => {
        client.makeUnaryRequest(
          '/grpc.health.v1.Health/Check',
          encode,
          decode,
          service,
          { deadline: Date.now() + 5_000 },
          (err: ServiceError | null, status?: string) =>
            resolve(err ? `code ${err.code} (${grpcStatus[err.code]}): ${err.details}` : (status ?? '')),
        );
      }),
    close: () => client.close(),
  };
}
