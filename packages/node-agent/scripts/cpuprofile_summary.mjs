// Where a CPU profile of the bundled agent spent its time, by original source file and function.
// The bundle is one minified file, so a raw --cpu-prof profile names only bundle positions; this
// maps them back through the bundle's linked source map.
//   node scripts/cpuprofile_summary.mjs <profile.cpuprofile> [<bundle>.map] [--top N]
// The map defaults to bench/dist/bench-agent-main.mjs.map (the benchmark's agent). Samples longer
// than a second are left out: they are the time the benchmark kept the agent stopped (SIGSTOP).
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

const MAX_SAMPLE_US = 1_000_000;

/** Self time (ms) per package or source file, and per function, with the busy and idle totals. */
export function summarize(profile, sourceMap) {
  const map = new SourceMap(sourceMap);
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const byArea = new Map();
  const byFunction = new Map();
  let busy = 0;
  let idle = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    if (us > MAX_SAMPLE_US) return;
    const frame = nodes.get(id).callFrame;
    if (frame.functionName === '(idle)') {
      idle += us;
      return;
    }
    busy += us;
    let area = frame.url ? frame.url.split('/').pop() : frame.functionName;
    let fn = `${frame.functionName || '(anonymous)'} ${area}`;
    const entry = frame.url.endsWith('.mjs')
      ? map.findEntry(frame.lineNumber, frame.columnNumber)
      : undefined;
    if (entry?.originalSource) {
      const src = entry.originalSource;
      const pkg = src.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
      area = pkg ? pkg[1] : src.replace(/^.*\/packages\//, '').replace(/^(\.\.\/)+/, '');
      fn = `${frame.functionName || '(anonymous)'} ${src.split('/').slice(-2).join('/')}:${entry.originalLine + 1}`;
    }
    byArea.set(area, (byArea.get(area) ?? 0) + us);
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
  });
  const ms = (m) => [...m].sort((a, b) => b[1] - a[1]).map(([k, us]) => [k, Math.round(us / 1000)]);
  return {
    busyMs: Math.round(busy / 1000),
    idleMs: Math.round(idle / 1000),
    byArea: ms(byArea),
    byFunction: ms(byFunction),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 25;
  const [profilePath, mapPath = new URL('../bench/dist/bench-agent-main.mjs.map', import.meta.url)] = args;
  if (!profilePath) {
    process.stderr.write(
      'usage: node scripts/cpuprofile_summary.mjs <profile.cpuprofile> [<bundle>.map] [--top N]\n',
    );
    process.exit(2);
  }
  const s = summarize(
    JSON.parse(readFileSync(profilePath, 'utf8')),
    JSON.parse(readFileSync(mapPath, 'utf8')),
  );
  const rows = (list) =>
    list
      .slice(0, top)
      .map(([k, v]) => `${String(v).padStart(7)} ms  ${k}`)
      .join('\n');
  process.stdout.write(
    `busy ${s.busyMs} ms, idle ${s.idleMs} ms\n\nby package or file:\n${rows(s.byArea)}\n\nby function:\n${rows(s.byFunction)}\n`,
  );
}
