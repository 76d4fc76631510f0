#!/usr/bin/env node
// The import-graph check (issue 19): for every workspace (packages/, apps/, backends/, e2e),
// reads the relative imports of src/**/*.ts and fails on any import circle between files and any
// cycle between folders of one package, and on an import of another workspace that the importer
// does not declare as a dependency (issue 29). A circle makes load order matter and hides which file owns a
// name; a folder cycle means neither folder can be read, tested or moved without the other.
// Known cycles are listed in import-graph.allow.json with their issue, so CI fails only on new
// ones; a listed cycle that is gone is reported so the list can shrink.
// The package entry src/index.ts, when it only re-exports, is the public barrel: its imports stay
// in the file graph but not in the folder graph, since the barrel sits above every folder it
// gathers rather than inside the root folder (an index.ts with code of its own counts as `.`).
//   node scripts/import-graph.mjs [--verbose] [--root <dir>] [--allow <file>] [--print-allow <issue>]
// --verbose also lists the folder pairs that import each other and the imports that point up
// (into an ancestor folder); --print-allow prints an allow-list covering every cycle found now.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

// import/export ... from '<rel>' (lists may span lines) and side-effect `import '<rel>'`.
const STATEMENT =
  /^[ \t]*(import|export)\s+(?:(type)\s+)?(?:([^'";]*?)\s*from\s*)?['"](\.{1,2}\/[^'"]*|\.{1,2})['"]/gm;

/** The relative specifiers a module names, each with whether only types come through it. */
export function parseImports(source) {
  const out = [];
  for (const m of source.matchAll(STATEMENT)) {
    const [, , typeKeyword, clause, specifier] = m;
    out.push({ specifier, typeOnly: Boolean(typeKeyword) || allTypeSpecifiers(clause) });
  }
  return out;
}

/** `{ type A, type B }`: every named specifier is a type, so nothing is loaded at run time. */
function allTypeSpecifiers(clause) {
  const named = /^\{([^}]*)\}$/.exec(clause?.trim() ?? '');
  if (!named) return false;
  const names = named[1]
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return names.length > 0 && names.every((s) => s.startsWith('type '));
}

/** Whether a module only re-exports (`export ... from`), with no code or imports of its own. */
export function isBarrel(source) {
  const statements = source
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '')
    .split(';')
    .map((s) => s.trim())
    .filter(Boolean);
  return statements.length > 0 && statements.every((s) => /^export\b[^'"]*\bfrom\s*['"][^'"]+['"]$/.test(s));
}

/** Every `.ts` file under dir (not declarations), as paths relative to dir with `/`. */
function listSources(dir, prefix = '') {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) => {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) return listSources(dir, rel);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** The source file a specifier names: `./a.js` is `a.ts`, `./dir` is `dir/index.ts`. */
function resolveSpecifier(from, specifier, files) {
  const target = posix.normalize(posix.join(posix.dirname(from), specifier));
  return [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, `${target}/index.ts`].find((c) =>
    files.has(c),
  );
}

const folderOf = (file) => posix.dirname(file);

/** Strongly connected components with more than one member (or a member that imports itself). */
function components(nodes, edges) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  let next = 0;
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const members = [];
    for (let w; w !== v; ) {
      w = stack.pop();
      onStack.delete(w);
      members.push(w);
    }
    if (members.length > 1 || edges.get(v)?.has(v)) found.push(members.sort());
  };
  for (const v of [...nodes].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** The shortest path from `from` to `to` inside `members`. */
function path(from, to, members, edges) {
  const inside = new Set(members);
  const previous = new Map([[from, undefined]]);
  const queue = [from];
  while (queue.length > 0) {
    const v = queue.shift();
    if (v === to) break;
    for (const w of edges.get(v) ?? [])
      if (inside.has(w) && !previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
  }
  const out = [];
  for (let u = to; u !== undefined; u = previous.get(u)) out.unshift(u);
  return out;
}

/**
 * Each cycle as a strongly connected component: its members and the imports inside it, every one
 * of which lies on some circle (`a -> b`).
 */
function cycles(nodes, edges) {
  return components(nodes, edges).map((members) => ({
    members,
    edges: members.flatMap((a) =>
      [...(edges.get(a) ?? [])].filter((b) => members.includes(b)).map((b) => `${a} -> ${b}`),
    ),
  }));
}

/** One circle through the import `a -> b`, to show how it closes. */
function circleThrough(edge, members, edges) {
  const [a, b] = edge.split(' -> ');
  return a === b ? [a, a] : [a, ...path(b, a, members, edges)];
}

/** The import graph of one package's src/: files, folders, cycles and upward imports. */
export function analysePackage(srcDir) {
  const files = new Set(listSources(srcDir));
  const fileEdges = new Map();
  const folderEdges = new Map();
  let imports = 0;
  let typeOnly = 0;
  const upward = [];
  const barrel = files.has('index.ts') && isBarrel(readFileSync(join(srcDir, 'index.ts'), 'utf8'));
  const link = (graph, from, to) => {
    if (!graph.has(from)) graph.set(from, new Set());
    graph.get(from).add(to);
  };
  for (const file of files) {
    const source = readFileSync(join(srcDir, file), 'utf8');
    for (const imp of parseImports(source)) {
      const target = resolveSpecifier(file, imp.specifier, files);
      if (!target) continue;
      imports++;
      if (imp.typeOnly) typeOnly++;
      link(fileEdges, file, target);
      const [from, to] = [folderOf(file), folderOf(target)];
      if (from === to || (barrel && file === 'index.ts')) continue;
      link(folderEdges, from, to);
      // Up: into a folder that contains the importer's (`.` is src/ itself).
      if (to === '.' || from.startsWith(`${to}/`)) upward.push(`${file} -> ${target}`);
    }
  }
  const folders = new Set([...files].map(folderOf));
  const folderPairs = [];
  for (const [a, targets] of folderEdges)
    for (const b of targets) if (a < b && folderEdges.get(b)?.has(a)) folderPairs.push(`${a} <-> ${b}`);
  return {
    files: files.size,
    imports,
    typeOnly,
    folders: folders.size,
    folderPairs: folderPairs.sort(),
    upward,
    cycles: {
      files: cycles(files, fileEdges).map((c) => ({ ...c, graph: fileEdges })),
      folders: cycles(folders, folderEdges).map((c) => ({ ...c, graph: folderEdges })),
    },
  };
}

/**
 * Every workspace of the root package.json (`packages/*`, `apps/*`, `backends/*`, `e2e`) that has a
 * src/ folder, relative to root.
 */
export function packageDirs(root) {
  const { workspaces = [] } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  return workspaces
    .flatMap((pattern) => {
      if (!pattern.endsWith('/*')) return [pattern];
      const parent = pattern.slice(0, -2);
      return existsSync(join(root, parent))
        ? readdirSync(join(root, parent), { withFileTypes: true })
            .filter((e) => e.isDirectory())
            .map((e) => `${parent}/${e.name}`)
            .sort()
        : [];
    })
    .filter((dir) => existsSync(join(root, dir, 'src')));
}

// import/export ... from '<pkg>', import('<pkg>') and side-effect imports of a scoped package.
const PACKAGE_IMPORT =
  /(?:\bfrom\s*|\bimport\s*\(\s*|^[ \t]*import\s+)['"](@[\w.-]+\/[\w.-]+)(?:\/[^'"]*)?['"]/gm;

/**
 * Imports of the project's own packages that the importing workspace does not declare in its
 * `dependencies`: such an import works through the hoisted node_modules, but runs against the
 * order turbo builds in, and hides a dependency that may run upward (the harness loading the
 * suite that depends on it). Returns `<workspace>/src/<file> -> <package>` lines.
 */
export function undeclaredImports(root, dirs = packageDirs(root)) {
  const manifest = (dir) => {
    const file = join(root, dir, 'package.json');
    return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {};
  };
  const own = new Set(dirs.map((dir) => manifest(dir).name));
  const out = [];
  for (const dir of dirs) {
    const { name, dependencies = {} } = manifest(dir);
    for (const file of listSources(join(root, dir, 'src'))) {
      const source = readFileSync(join(root, dir, 'src', file), 'utf8');
      for (const [, pkg] of source.matchAll(PACKAGE_IMPORT))
        if (own.has(pkg) && pkg !== name && !(pkg in dependencies)) out.push(`${dir}/src/${file} -> ${pkg}`);
    }
  }
  return [...new Set(out)];
}

/**
 * Checks every package against the allow-list, whose entries list the imports inside known
 * cycles. A cycle passes when each import inside it is listed for its package and kind (files or
 * folders): one that shrank or split still passes, and any import that closes a new circle, even
 * inside a known tangle, fails. Returns the report lines, the failures (each with the unlisted
 * imports and one circle through the first), and the listed imports no cycle has any more.
 */
export function check(root, allow = { cycles: [] }) {
  const lines = [];
  const failures = [];
  const listed = new Map();
  for (const e of allow.cycles)
    for (const edge of e.edges)
      listed.set(`${e.package}\0${e.kind}\0${edge}`, { entry: e, edge, seen: false });
  const results = {};
  for (const pkg of packageDirs(root)) {
    const g = analysePackage(join(root, pkg, 'src'));
    results[pkg] = g;
    let known = 0;
    for (const kind of ['files', 'folders']) {
      for (const c of g.cycles[kind]) {
        const unlisted = c.edges.filter((edge) => {
          const l = listed.get(`${pkg}\0${kind}\0${edge}`);
          if (l) l.seen = true;
          return !l;
        });
        if (unlisted.length === 0) known++;
        else
          failures.push({
            package: pkg,
            kind,
            members: c.members,
            unlisted,
            circle: circleThrough(unlisted[0], c.members, c.graph),
          });
      }
    }
    const found = g.cycles.files.length + g.cycles.folders.length;
    lines.push(
      `${pkg}: ${g.files} files, ${g.imports} imports (${g.typeOnly} type-only), ${g.folders} folders; ` +
        `${g.cycles.files.length} file cycles, ${g.cycles.folders.length} folder cycles` +
        `${known > 0 ? ` (${known} of ${found} allowed)` : ''}, ` +
        `${g.folderPairs.length} folder pairs importing each other, ${g.upward.length} upward imports`,
    );
  }
  const stale = [...listed.values()].filter((l) => !l.seen);
  return { lines, failures, stale, results };
}

/** An allow-list that covers every cycle found now, for the given issue. */
function allowListFor(results, issue) {
  return {
    cycles: Object.entries(results).flatMap(([pkg, g]) =>
      ['files', 'folders'].flatMap((kind) =>
        g.cycles[kind].length === 0
          ? []
          : [{ package: pkg, kind, issue, edges: g.cycles[kind].flatMap((c) => c.edges) }],
      ),
    ),
  };
}

function main(argv) {
  const opt = (name, dflt) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : dflt;
  };
  const here = dirname(fileURLToPath(import.meta.url));
  const root = opt('root', join(here, '..'));
  const allowFile = opt('allow', join(here, 'import-graph.allow.json'));
  const allow = existsSync(allowFile) ? JSON.parse(readFileSync(allowFile, 'utf8')) : { cycles: [] };
  const { lines, failures, stale, results } = check(root, allow);
  const undeclared = undeclaredImports(root);
  const issue = opt('print-allow');
  if (issue) {
    console.log(JSON.stringify(allowListFor(results, Number(issue)), null, 2));
    return 0;
  }
  for (const l of lines) console.log(l);
  if (argv.includes('--verbose'))
    for (const [pkg, g] of Object.entries(results)) {
      for (const p of g.folderPairs) console.log(`  pair: ${pkg}/src: ${p}`);
      for (const u of g.upward) console.log(`  up: ${pkg}/src/${u}`);
    }
  const allowName = relative(root, allowFile).split(sep).join('/');
  for (const s of stale)
    console.log(
      `note: ${allowName} lists ${s.entry.package} (${s.entry.kind}) ${s.edge} (issue ${s.entry.issue}), ` +
        'which closes no circle any more: remove it',
    );
  for (const u of undeclared)
    console.error(`import graph: ${u} is not among that workspace's dependencies (package.json): declare it`);
  if (failures.length === 0) {
    console.log(`import graph: no new cycles${undeclared.length ? '' : ', every workspace import declared'}`);
    return undeclared.length ? 1 : 0;
  }
  console.error(`import graph: ${failures.length} cycle(s) with imports ${allowName} does not list:`);
  for (const f of failures)
    console.error(
      `  ${f.package} (${f.kind}): ${f.circle.join(' -> ')}\n    new: ${f.unlisted.join(', ')}\n` +
        `    cycle: [${f.members.join(', ')}]`,
    );
  return 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1])
  process.exit(main(process.argv.slice(2)));
