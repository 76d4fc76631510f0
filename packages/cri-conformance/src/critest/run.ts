import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { access, constants, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { CriClient } from '@kh/cri-api';
import { criToolsDir } from '@kh/testkit';
import { describeError } from '../framework/framework.js';
import { unmountAll } from '../framework/mounts.js';
import type { CaseStatus } from '../suite/runner.js';
import { parseGinkgoReport, type SpecResult } from './report.js';
import { CRITEST_SKIPS, type CritestSkip, literalPattern } from './skips.js';

export interface CritestOptions {
  endpoint: string;
  /** critest binary (default: findCritest()). */
  critest?: string;
  /** defaultTestContainerImage (a busybox) and webServerTestImage (serves HTTP on :80). */
  images: { busybox: string; httpd: string };
  /** Extra --ginkgo.focus / --ginkgo.skip regexes (Go syntax), the same for every endpoint. */
  focus?: readonly string[];
  skip?: readonly string[];
  /** The skip list with reasons (default CRITEST_SKIPS). */
  skips?: readonly CritestSkip[];
  /**
   * Runs per spec before it counts as failed (`--ginkgo.flake-attempts`; default 1). A pass after a
   * failed attempt is reported as flaky, with the failure. CRI-O gates on critest with 3: starting a
   * container and stopping it at once is racy on a loaded machine (cri-o#1657), since a SIGTERM that
   * reaches `top` (PID 1) before it installs its handler is dropped, and only the SIGKILL after the
   * whole timeout stops it.
   */
  flakeAttempts?: number;
  timeoutMs?: number;
  progress?: (line: string) => void;
}

export interface CritestResult {
  endpoint: string;
  /** Which runtime set-up this was, when one endpoint can mean several (critest-nodes' sides). */
  side?: string;
  runtime: { name: string; version: string };
  critestVersion: string;
  startedAt: string;
  durationMs: number;
  totals: Record<CaseStatus, number>;
  specs: SpecResult[];
}

/** critest on PATH, else in the project's tool cache. */
export async function findCritest(): Promise<string> {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), criToolsDir()];
  for (const dir of dirs) {
    const path = join(dir, 'critest');
    try {
      await access(path, constants.X_OK);
      return path;
    } catch {}
  }
  throw new Error(
    `critest is neither on PATH nor in ${criToolsDir()}: build it with \`bash scripts/cri-tools.sh\` or pass --critest`,
  );
}

/** critest's --test-images-file: JSON strings are YAML scalars. */
export function imagesFile(images: CritestOptions['images']): string {
  return `defaultTestContainerImage: ${JSON.stringify(images.busybox)}\nwebServerTestImage: ${JSON.stringify(images.httpd)}\n`;
}

export function critestArgs(options: CritestOptions, files: { images: string; report: string }): string[] {
  const skips = options.skips ?? CRITEST_SKIPS;
  return [
    `--runtime-endpoint=${options.endpoint}`,
    `--image-endpoint=${options.endpoint}`,
    `--test-images-file=${files.images}`,
    `--ginkgo.json-report=${files.report}`,
    '--ginkgo.no-color',
    ...((options.flakeAttempts ?? 1) > 1 ? [`--ginkgo.flake-attempts=${options.flakeAttempts}`] : []),
    ...(options.focus ?? []).map((f) => `--ginkgo.focus=${f}`),
    ...[...skips.map((s) => literalPattern(s.spec)), ...(options.skip ?? [])].map(
      (s) => `--ginkgo.skip=${s}`,
    ),
  ];
}

export async function runtimeOf(endpoint: string): Promise<{ name: string; version: string }> {
  try {
    const client = await CriClient.connect(endpoint, { timeoutMs: 10_000, connectTimeoutMs: 5_000 });
    try {
      const v = await client.version({ version: '0.1.0' });
      return { name: v.runtimeName, version: v.runtimeVersion };
    } finally {
      client.close();
    }
  } catch (err) {
    throw new Error(`cannot talk CRI to ${endpoint}: ${describeError(err)}`);
  }
}

/**
 * Where critest runs: the endpoint as critest dials it, a directory for the images file and the
 * report (as this process and as critest see it), and how to start critest there with the given
 * arguments (with a TMPDIR of its own: pod log dirs, mount propagation and seccomp host paths).
 */
export interface CritestSite {
  endpoint: string;
  dir: { local: string; critest: string };
  run(args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }>;
}

/**
 * Runs critest at a site and reads its JSON report. `runtime` is the endpoint's CRI Version as this
 * process asked it (the site's endpoint may only be reachable from where critest runs).
 */
export async function critestAt(
  site: CritestSite,
  runtime: { name: string; version: string },
  opts: Omit<CritestOptions, 'endpoint' | 'critest'>,
): Promise<CritestResult> {
  const progress = opts.progress ?? (() => undefined);
  const started = Date.now();
  const name = (dir: string) => ({ images: join(dir, 'images.yaml'), report: join(dir, 'report.json') });
  const local = name(site.dir.local);
  await writeFile(local.images, imagesFile(opts.images));
  progress(`critest: ${runtime.name} ${runtime.version} at ${site.endpoint}`);
  const { code, output } = await site.run(
    critestArgs({ ...opts, endpoint: site.endpoint }, name(site.dir.critest)),
    opts.timeoutMs ?? 20 * 60_000,
  );
  const report = await readFile(local.report, 'utf8').catch(() => undefined);
  if (report === undefined)
    throw new Error(
      `critest wrote no report (exit ${code}):\n${output.trim().split('\n').slice(-20).join('\n')}`,
    );
  const specs = parseGinkgoReport(report, opts.skips ?? CRITEST_SKIPS);
  const totals: Record<CaseStatus, number> = { passed: 0, failed: 0, skipped: 0 };
  for (const s of specs) totals[s.status]++;
  const durationMs = Date.now() - started;
  const retried = specs.filter((s) => s.status === 'passed' && (s.attempts ?? 1) > 1).length;
  progress(
    `critest on ${runtime.name}: ${totals.passed} passed${retried > 0 ? ` (${retried} only on a retry)` : ''}, ${totals.failed} failed, ${totals.skipped} skipped in ${(durationMs / 1000).toFixed(1)} s`,
  );
  return {
    endpoint: site.endpoint,
    runtime,
    critestVersion: /critest version: (\S+)/.exec(output)?.[1] ?? 'unknown',
    startedAt: new Date(started).toISOString(),
    durationMs,
    totals,
    specs,
  };
}

/**
 * Runs upstream critest on this machine against one endpoint. critest's temp files go to a private
 * TMPDIR, removed afterwards with anything a failed spec left mounted there.
 */
export async function runCritest(opts: CritestOptions): Promise<CritestResult> {
  const critest = opts.critest ?? (await findCritest());
  const runtime = await runtimeOf(opts.endpoint);
  const dir = await mkdtemp(join(tmpdir(), 'cri-conformance-critest-'));
  try {
    await mkdir(join(dir, 'tmp'));
    const site: CritestSite = {
      endpoint: opts.endpoint,
      dir: { local: dir, critest: dir },
      run: (args, timeoutMs) =>
        spawnLogged(critest, args, {
          env: { ...process.env, TMPDIR: join(dir, 'tmp') },
          logPath: join(dir, 'critest.log'),
          timeoutMs,
        }),
    };
    return await critestAt(site, runtime, opts);
  } finally {
    await unmountAll(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

/** Runs a program with its output going to a log file (critest's is long); returns the code and the output. */
function spawnLogged(
  program: string,
  args: string[],
  o: { env: NodeJS.ProcessEnv; logPath: string; timeoutMs: number },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { env: o.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const log = createWriteStream(o.logPath);
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      log.write(chunk);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`critest did not finish within ${o.timeoutMs / 1000} s`));
    }, o.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      log.end(() => resolve({ code, output }));
    });
  });
}
