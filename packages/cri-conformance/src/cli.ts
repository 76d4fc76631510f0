#!/usr/bin/env node
// cri-conformance: run the critest-style suite against any CRI endpoint.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { critestMain } from './critest/cli.js';
import { critestNodesMain } from './critest/nodes-cli.js';
import type { ConformanceOptions } from './framework/framework.js';
import { writeOut } from './framework/output.js';
import { SUITE_CLI_OPTIONS } from './suite/cli-args.js';
import { compareSides, formatComparison, suiteSide } from './suite/compare.js';
import { formatSummary, toJUnitXml } from './suite/report.js';
import { runConformance, type SuiteResult } from './suite/runner.js';

const USAGE = `Usage: cri-conformance --endpoint <unix:///path.sock> [--endpoint <B>] [options]
       cri-conformance critest --endpoint <A> [--endpoint <B>] ...   (upstream critest; see critest --help)
       cri-conformance critest-nodes [--release <r>] [--critest <v>]   (upstream critest in node containers,
                                                                containerd vs the dockershim; see --help)

Runs sandbox, container, exec, logs, stats, image, idempotence, networking, security context,
seccomp, mount propagation, streaming, runtime info and events cases against a CRI v1 runtime.
Exit code 1 if any case failed. Given two endpoints, runs the suite on each in turn and prints a
table of the cases where they differ; A is the reference: exit code 1 when B fails a case A passes.

Options:
  --endpoint <ep>            CRI endpoint (unix:///path, /path, tcp://host:port)       [required]
  --image-prefix <prefix>    test images are <prefix>busybox:latest and <prefix>httpd:latest
  --busybox-image <ref>      image with a shell and busybox applets (overrides the prefix)
  --httpd-image <ref>        image serving HTTP on port 80 (overrides the prefix)
  --registry <host:port>     registry the runtime pulls from (image cases skip without it)
  --registry-image <repo:tag> image already pushed there (default kh/busybox:conformance)
  --registry-auth <user:pw>  basic-auth credentials of that registry
  --log-dir <dir>            pod log directory root as the runtime sees it (default: a temp dir,
                             removed after the run unless a case failed)
  --log-dir-local <dir>      the same directory as this process sees it (default: --log-dir)
  --host-port-address <ip>   where this process reaches pod host ports ('' skips; default 127.0.0.1)
  --host-port-ip <ip>        host_ip of host-port mappings (default '')
  --cgroup-parent <path>     cgroup_parent of every sandbox (default '': the runtime's default)
  --streaming-unreachable <why>  the runtime's streaming server cannot be reached from here
                             (e.g. it serves on a node container's loopback): streaming cases skip
  --focus <regex>            only cases whose "group name" matches
  --junit <file>             write JUnit XML (one endpoint only)
  --json <file>              write the JSON result (two endpoints: both results and the comparison)
  --timeout <seconds>        per CRI call deadline (default 120)
  -h, --help`;

async function main(args: string[]): Promise<number> {
  if (args[0] === 'critest') return critestMain(args.slice(1));
  if (args[0] === 'critest-nodes') return critestNodesMain(args.slice(1));
  const { values } = parseArgs({
    args,
    options: SUITE_CLI_OPTIONS,
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const endpoints = values.endpoint ?? [];
  if (endpoints.length === 0) {
    process.stderr.write(`cri-conformance: --endpoint is required\n\n${USAGE}\n`);
    return 2;
  }
  if (endpoints.length > 1 && values.junit) {
    process.stderr.write('cri-conformance: --junit takes one endpoint; --json writes both results\n');
    return 2;
  }
  let auth: { username: string; password: string } | undefined;
  if (values['registry-auth']) {
    const colon = values['registry-auth'].indexOf(':');
    if (colon <= 0) throw new Error('--registry-auth must be user:password');
    auth = {
      username: values['registry-auth'].slice(0, colon),
      password: values['registry-auth'].slice(colon + 1),
    };
  }
  // Without --log-dir the logs go to a directory of our own, removed after a clean run and kept
  // (and named) when a case failed, for reading the containers' output.
  const ownLogDir = values['log-dir'] ? undefined : await mkdtemp(join(tmpdir(), 'cri-conformance-logs-'));
  const logDir = values['log-dir'] ?? (ownLogDir as string);
  let keepLogs = false;
  try {
    const prefix = values['image-prefix'];
    const options: Omit<ConformanceOptions, 'endpoint'> = {
      images: {
        busybox: values['busybox-image'] ?? `${prefix}busybox:latest`,
        httpd: values['httpd-image'] ?? `${prefix}httpd:latest`,
      },
      registry: values.registry
        ? { address: values.registry, image: values['registry-image'], ...(auth ? { auth } : {}) }
        : undefined,
      logDir: { runtime: logDir, local: values['log-dir-local'] ?? logDir },
      hostPortAddress: values['host-port-address'],
      hostPortIp: values['host-port-ip'],
      cgroupParent: values['cgroup-parent'],
      streamingUnreachable: values['streaming-unreachable'],
      focus: values.focus ? new RegExp(values.focus) : undefined,
      runId: `conformance-${randomBytes(4).toString('hex')}`,
      callTimeoutMs: Number(values.timeout) * 1000,
    };
    const progress = (line: string) => process.stderr.write(`${line}\n`);
    const results: SuiteResult[] = [];
    for (const endpoint of endpoints)
      results.push(await runConformance({ ...options, endpoint }, { progress }));
    for (const result of results) process.stdout.write(`\n${formatSummary(result)}\n`);
    const [result] = results as [SuiteResult];
    let failed = result.totals.failed > 0;
    if (results.length > 1) {
      const comparison = compareSides(results.map(suiteSide));
      process.stdout.write(`\n${formatComparison(comparison)}\n`);
      if (values.json) await writeOut(values.json, `${JSON.stringify({ results, comparison }, null, 2)}\n`);
      failed = comparison.regressions > 0;
    } else if (values.json) await writeOut(values.json, `${JSON.stringify(result, null, 2)}\n`);
    if (values.junit) await writeOut(values.junit, toJUnitXml(result));
    if (!failed) return 0;
    keepLogs = ownLogDir !== undefined;
    if (keepLogs) process.stderr.write(`cri-conformance: the containers' logs are kept in ${ownLogDir}\n`);
    return 1;
  } finally {
    if (ownLogDir && !keepLogs) await rm(ownLogDir, { recursive: true, force: true });
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`cri-conformance: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
