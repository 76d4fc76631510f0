import { describe, expect, test } from 'vitest';
import { parseDpkgStatus } from '../src/images/build.js';
import { canonicalJson, imageRef, type RecipeInputs, recipeHash, resolveInputs } from '../src/images/hash.js';
import {
  DEFAULT_NODE_RELEASE,
  IMAGE_NAMES,
  NODE_ELOGIND_PATH,
  NODE_RELEASES,
  nodeImageName,
  nodeReleaseFromEnv,
  RECIPES,
  type Recipe,
} from '../src/images/recipes.js';

const busyboxInputs: RecipeInputs = { kind: 'busybox', busyboxSha256: 'a'.repeat(64) };
const nodeInputs: RecipeInputs = { kind: 'debootstrap', mirror: 'http://deb.debian.org/debian' };
const clone = <T>(v: T): T => structuredClone(v);

describe('recipe hashing', () => {
  test('is stable: equal recipes and inputs give the same 12-hex-digit hash', () => {
    const a = recipeHash(RECIPES.httpd, busyboxInputs);
    expect(a).toMatch(/^[0-9a-f]{12}$/);
    expect(recipeHash(clone(RECIPES.httpd), clone(busyboxInputs))).toBe(a);
  });

  test('does not depend on the order of object keys', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: 3 } })).toBe(
      canonicalJson({ a: { c: 3, d: [2, { e: 0, f: 1 }] }, b: 1 }),
    );
    const reordered = Object.fromEntries(Object.entries(RECIPES.memhog).reverse()) as unknown as Recipe;
    expect(recipeHash(reordered, busyboxInputs)).toBe(recipeHash(RECIPES.memhog, busyboxInputs));
  });

  test('changes when a recipe file, the command or the package list changes', () => {
    const base = recipeHash(RECIPES.memhog, busyboxInputs);
    const script = clone(RECIPES.memhog);
    if (script.kind !== 'busybox') throw new Error('memhog is a busybox recipe');
    script.files['/bin/memhog']!.content += '# changed\n';
    expect(recipeHash(script, busyboxInputs)).not.toBe(base);

    const cmd = clone(RECIPES.memhog);
    cmd.config.cmd = ['/bin/sh'];
    expect(recipeHash(cmd, busyboxInputs)).not.toBe(base);

    const node = clone(RECIPES.node);
    if (node.kind !== 'debootstrap') throw new Error('node is a debootstrap recipe');
    const nodeBase = recipeHash(RECIPES.node, nodeInputs);
    node.packages.push('curl');
    expect(recipeHash(node, nodeInputs)).not.toBe(nodeBase);
  });

  test('changes when a machine input changes: the busybox binary or the Debian mirror', () => {
    expect(recipeHash(RECIPES.pause, { kind: 'busybox', busyboxSha256: 'b'.repeat(64) })).not.toBe(
      recipeHash(RECIPES.pause, busyboxInputs),
    );
    expect(
      recipeHash(RECIPES.node, { kind: 'debootstrap', mirror: 'http://mirror.example/debian' }),
    ).not.toBe(recipeHash(RECIPES.node, nodeInputs));
  });

  test("changes with a program's source, its mode and the compiler that builds it", () => {
    const compiler = { gcc: 'gcc (Debian 12.2.0-14+deb12u1) 12.2.0', libcSha256: 'c'.repeat(64) };
    const inputs: RecipeInputs = { ...busyboxInputs, compiler };
    const base = recipeHash(RECIPES.nonewprivs, inputs);
    const edit = (change: (p: { source: string; mode: number }) => void) => {
      const r = clone(RECIPES.nonewprivs);
      if (r.kind !== 'busybox' || !r.programs)
        throw new Error('nonewprivs is a busybox recipe with programs');
      change(r.programs['/usr/local/bin/nnp']!);
      return recipeHash(r, inputs);
    };
    expect(
      edit((p) => {
        p.source += '/* changed */\n';
      }),
    ).not.toBe(base);
    expect(
      edit((p) => {
        p.mode = 0o755;
      }),
    ).not.toBe(base);
    expect(recipeHash(RECIPES.nonewprivs, { ...inputs, compiler: { ...compiler, gcc: 'gcc 13' } })).not.toBe(
      base,
    );
    expect(
      recipeHash(RECIPES.nonewprivs, { ...inputs, compiler: { ...compiler, libcSha256: 'd'.repeat(64) } }),
    ).not.toBe(base);
  });

  test("resolves the host's gcc and libc.a only for recipes with programs", async () => {
    const plain = await resolveInputs(RECIPES.busybox);
    expect(plain).not.toHaveProperty('compiler');
    const withPrograms = await resolveInputs(RECIPES.nonewprivs);
    expect(withPrograms.kind === 'busybox' && withPrograms.compiler).toEqual({
      gcc: expect.stringMatching(/^gcc /),
      libcSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
  });

  test('resolves the static libraries a program links (netexec: OpenSSL), so a new libssl builds a new image', async () => {
    const inputs = await resolveInputs(RECIPES.netexec);
    const sha = expect.stringMatching(/^[0-9a-f]{64}$/);
    expect(inputs.kind === 'busybox' && inputs.compiler?.libsSha256).toEqual({
      ssl: sha,
      crypto: sha,
      pthread: sha,
    });
    if (inputs.kind !== 'busybox' || !inputs.compiler) throw new Error('netexec has programs');
    const other = { ...inputs.compiler, libsSha256: { ...inputs.compiler.libsSha256, ssl: 'e'.repeat(64) } };
    expect(recipeHash(RECIPES.netexec, { ...inputs, compiler: other })).not.toBe(
      recipeHash(RECIPES.netexec, inputs),
    );
  });

  test("resolves a Go program's toolchain, vendored modules and source (netexec's grpc-health-checking)", async () => {
    const inputs = await resolveInputs(RECIPES.netexec);
    if (inputs.kind !== 'busybox' || !inputs.go) throw new Error('netexec has a Go program');
    const toolchain = RECIPES['go-trixie'];
    // The toolchain by its content reference: naming the tag needs no built go-trixie image.
    expect(inputs.go).toEqual({
      toolchain: imageRef(toolchain, recipeHash(toolchain, await resolveInputs(toolchain))),
      vendorSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      sources: { 'grpc-health': expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    expect(await resolveInputs(RECIPES.busybox)).not.toHaveProperty('go');
    const base = recipeHash(RECIPES.netexec, inputs);
    const go = inputs.go;
    for (const other of [
      { ...go, toolchain: 'kubelet-harness/go-trixie:000000000000' },
      { ...go, vendorSha256: 'f'.repeat(64) },
      { ...go, sources: { 'grpc-health': '0'.repeat(64) } },
    ])
      expect(recipeHash(RECIPES.netexec, { ...inputs, go: other })).not.toBe(base);
  });

  test('gives every image its own hash, so images never share a tag by accident', () => {
    const names = IMAGE_NAMES.filter((n) => n !== 'node');
    const hashes = names.map((n) =>
      recipeHash(RECIPES[n], RECIPES[n].kind === 'busybox' ? busyboxInputs : nodeInputs),
    );
    expect(new Set(hashes).size).toBe(names.length);
  });

  test("`node` is the default release's node image, under the same reference", () => {
    const alias = RECIPES.node;
    const named = RECIPES[nodeImageName(DEFAULT_NODE_RELEASE)];
    expect(alias).toEqual(named);
    expect(imageRef(alias, recipeHash(alias, nodeInputs))).toBe(
      imageRef(named, recipeHash(named, nodeInputs)),
    );
  });

  test('covers the Debian release: each release has its own node image and hash', () => {
    const hashes = NODE_RELEASES.map((r) => recipeHash(RECIPES[nodeImageName(r)], nodeInputs));
    expect(new Set(hashes).size).toBe(NODE_RELEASES.length);
    const node = clone(RECIPES.node);
    if (node.kind !== 'debootstrap') throw new Error('node is a debootstrap recipe');
    node.suite = 'forky';
    expect(recipeHash(node, nodeInputs)).not.toBe(recipeHash(RECIPES.node, nodeInputs));
    const forky = RECIPES['node-forky'];
    expect(forky.kind === 'debootstrap' && forky.script).toBe('/usr/share/debootstrap/scripts/sid');
  });

  test("every node image has a system bus and elogind, installed by apt after debootstrap, elogind's daemon at one path", () => {
    for (const release of NODE_RELEASES) {
      const recipe = RECIPES[nodeImageName(release)];
      if (recipe.kind !== 'debootstrap') throw new Error(`node-${release} is a debootstrap recipe`);
      expect(recipe.aptPackages).toEqual(['dbus-daemon', 'dbus-bin', 'elogind']);
      // Not through debootstrap's resolver, which cannot swap libsystemd0 for libelogind0.
      expect(recipe.packages).not.toContain('elogind');
      expect(Object.keys(recipe.links ?? {})).toEqual([NODE_ELOGIND_PATH]);
      expect(recipe.recordVersions).toContain('elogind');
    }
    const elogind = (release: (typeof NODE_RELEASES)[number]) => {
      const recipe = RECIPES[nodeImageName(release)];
      return recipe.kind === 'debootstrap' ? recipe.links?.[NODE_ELOGIND_PATH] : undefined;
    };
    expect(elogind('bookworm')).toBe('/lib/elogind/elogind');
    expect(elogind('trixie')).toBe('/usr/libexec/elogind');
  });

  test('reads installed package versions from a dpkg status file', () => {
    const status = [
      'Package: containerd\nStatus: install ok installed\nVersion: 2.1.9+ds1-5\n',
      'Package: runc\nStatus: deinstall ok config-files\nVersion: 1.1.5\n',
      'Package: docker.io\nStatus: install ok installed\nPriority: optional\nVersion: 28.5.2+dfsg4-5\nDescription: x\n',
    ].join('\n');
    expect(Object.fromEntries(parseDpkgStatus(status))).toEqual({
      containerd: '2.1.9+ds1-5',
      'docker.io': '28.5.2+dfsg4-5',
    });
  });

  test('names images kubelet-harness/<name>:<hash>', () => {
    expect(imageRef(RECIPES.pause, '0123456789ab')).toBe('kubelet-harness/pause:0123456789ab');
  });
});

describe('nodeReleaseFromEnv', () => {
  test('is KH_NODE_RELEASE, else the default release', () => {
    expect(nodeReleaseFromEnv({ KH_NODE_RELEASE: 'bookworm' })).toBe('bookworm');
    expect(nodeReleaseFromEnv({ KH_NODE_RELEASE: 'forky' })).toBe('forky');
    expect(nodeReleaseFromEnv({})).toBe(DEFAULT_NODE_RELEASE);
    expect(nodeReleaseFromEnv({ KH_NODE_RELEASE: '' })).toBe(DEFAULT_NODE_RELEASE);
  });

  test('refuses an unknown release, naming the ones there are', () => {
    expect(() => nodeReleaseFromEnv({ KH_NODE_RELEASE: 'buster' })).toThrow(
      'KH_NODE_RELEASE=buster: must be one of bookworm, trixie, forky',
    );
  });
});
