import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KUBECTL, kubectl } from './helpers.js';

const CLI = join(import.meta.dirname, '..', 'dist', 'cli.js');

describe('fake-apiserver CLI', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-cli-'));
  let child: ChildProcess | undefined;
  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints a kubeconfig with its generated CA and token that kubectl uses as is', async () => {
    const tokens = join(dir, 'tokens.csv');
    writeFileSync(tokens, 'cli-token,admin,uid-1,"system:masters"\n');
    child = spawn(
      process.execPath,
      [
        CLI,
        ...['--port', '0', '--tls', '--tls-host', 'apiserver', '--token-file', tokens, '--print-kubeconfig'],
        ...['--ca-cert-out', join(dir, 'ca.crt')],
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    await new Promise<void>((resolve, reject) => {
      child!.stderr!.on('data', (c: Buffer) => {
        stderr += c.toString();
        if (/listening on https:\/\/127\.0\.0\.1:\d+/.test(stderr)) resolve();
      });
      child!.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
    });
    const kc = parse(stdout);
    expect(kc.users[0].user.token).toBe('cli-token');
    expect(Buffer.from(kc.clusters[0].cluster['certificate-authority-data'], 'base64').toString()).toMatch(
      /BEGIN CERTIFICATE/,
    );
    // The CA a kubelet trusts for the apiserver's client certificate is the kubeconfig's.
    expect(readFileSync(join(dir, 'ca.crt'), 'utf8')).toBe(
      Buffer.from(kc.clusters[0].cluster['certificate-authority-data'], 'base64').toString(),
    );
    const path = join(dir, 'kubeconfig');
    writeFileSync(path, stdout);
    const got = await kubectl(KUBECTL.newest, path, ['get', 'namespace', 'kube-node-lease', '-o', 'name']);
    expect(got.stderr).toBe('');
    expect(got.stdout.trim()).toBe('namespace/kube-node-lease');
    // SIGTERM shuts it down cleanly.
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  // Issue 36: open to this machine only, unless the user says so.
  it('serves without authentication on loopback only; elsewhere only with --insecure-allow-unauthenticated-remote', async () => {
    /** Starts the CLI: its URL once it listens, or its exit code and stderr. */
    const start = (args: string[]) =>
      new Promise<{ url?: string; code?: number | null; stderr: string; proc: ChildProcess }>((resolve) => {
        const proc = spawn(process.execPath, [CLI, '--port', '0', ...args], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        proc.stderr!.on('data', (c: Buffer) => {
          stderr += c.toString();
          const url = /listening on (http:\/\/[^\s]+)/.exec(stderr)?.[1];
          if (url) resolve({ url, stderr, proc });
        });
        proc.once('exit', (code) => resolve({ code, stderr, proc }));
      });
    const stop = async (proc: ChildProcess) => {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    };
    const remote = await start(['--host', '0.0.0.0']);
    expect(remote.code, remote.stderr).toBe(1);
    expect(remote.stderr).toMatch(/--insecure-allow-unauthenticated-remote/);
    const allowed = await start(['--host', '0.0.0.0', '--insecure-allow-unauthenticated-remote']);
    expect(allowed.url, allowed.stderr).toBeDefined();
    await stop(allowed.proc);
    const local = await start([]);
    expect(local.url, local.stderr).toMatch(/^http:\/\/127\.0\.0\.1:/);
    try {
      expect((await fetch(new URL('/api/v1/secrets', local.url))).status).toBe(200);
    } finally {
      await stop(local.proc);
    }
  });

  it('refuses a bad flag value with a clear message', async () => {
    const bad = spawn(process.execPath, [CLI, '--port', 'abc'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    bad.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
    });
    const code = await new Promise<number | null>((r) => bad.once('exit', (c) => r(c)));
    expect(code).toBe(1);
    expect(err).toMatch(/--port: not a port: abc/);
    const bad2 = spawn(process.execPath, [CLI, '--port', '0', '--lease-grace-seconds', 'soon'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err2 = '';
    bad2.stderr!.on('data', (c: Buffer) => {
      err2 += c.toString();
    });
    expect(await new Promise<number | null>((r) => bad2.once('exit', (c) => r(c)))).toBe(1);
    expect(err2).toMatch(/--lease-grace-seconds: not a positive number of seconds: soon/);
  });
});
