import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { runLoad } from './load.js';

const TARGETS = { writeP99Ms: 25, watchP99Ms: 50, rssBytes: 500 * 2 ** 20 };

/** VmRSS / VmHWM of a process, from /proc. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** utime + stime of a process, from /proc (clock ticks of 1/100 s on Linux). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function main() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '60' },
      nodes: { type: 'string', default: '1000' },
      pods: { type: 'string', default: '10000' },
      watchers: { type: 'string', default: '100' },
      durable: { type: 'boolean', default: false },
      out: {
        type: 'string',
        default: join(import.meta.dirname, '..', '..', '.reports', 'bench', 'apiserver.json'),
      },
    },
  });
  const log = (line: string) => console.error(`[bench] ${line}`);
  // The apiserver runs as its own process (as it would in a run), on loopback; in memory unless
  // --durable, which measures the WAL path too (every write waits for its fsync).
  const cli = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');
  const dataDir = values.durable ? mkdtempSync(join(tmpdir(), 'kh-apiserver-bench-')) : undefined;
  const args = [cli, '--port', '0', '--anonymous', ...(dataDir ? ['--data-dir', dataDir] : [])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /listening on (\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`apiserver exited ${code}: ${err}`)));
  });
  log(`apiserver pid ${child.pid} at ${url}`);
  // Other work on the machine skews tail latencies on 2 cores; the report records it.
  const loadBefore = loadavg();
  try {
    const opts = {
      url,
      durable: values.durable,
      nodes: Number(values.nodes),
      pods: Number(values.pods),
      watchers: Number(values.watchers),
      durationSeconds: Number(values.duration),
      leaseRenewSeconds: 10,
      nodeChangeFraction: 0.1,
      podStatusPerSecond: 20,
    };
    const result = await runLoad({
      ...opts,
      progress: log,
      rss: () => memory(child.pid!).rss,
      cpuSeconds: () => cpuSeconds(child.pid!),
    });
    const mem = memory(child.pid!);
    const report = {
      benchmark: 'fake-apiserver kwok-style load',
      date: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        node: process.version,
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadavg(),
      },
      config: opts,
      results: {
        ...result,
        rssBytes: mem.rss,
        peakRssBytes: mem.peak,
        rssMiB: Math.round(mem.rss / 2 ** 20),
        peakRssMiB: Math.round(mem.peak / 2 ** 20),
      },
      targets: TARGETS,
      meetsTargets: {
        writeP99: result.writes.p99 <= TARGETS.writeP99Ms,
        watchP99: result.watchDelivery.p99 <= TARGETS.watchP99Ms,
        rss: mem.peak <= TARGETS.rssBytes,
      },
    };
    mkdirSync(dirname(values.out), { recursive: true });
    writeFileSync(values.out, `${JSON.stringify(report, null, 2)}\n`);
    log(
      `writes p50=${result.writes.p50}ms p99=${result.writes.p99}ms (n=${result.writes.count}, failures=${result.writeFailures})`,
    );
    log(
      `watch delivery p50=${result.watchDelivery.p50}ms p99=${result.watchDelivery.p99}ms (n=${result.watchDelivery.count})`,
    );
    log(
      `rss ${report.results.rssMiB} MiB (peak ${report.results.peakRssMiB} MiB), server cpu ${result.serverCpuPercentOfOneCore}% of a core`,
    );
    log(`wrote ${values.out}`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e: Error) => {
  console.error(`[bench] failed: ${e.stack ?? e.message}`);
  process.exit(1);
});
