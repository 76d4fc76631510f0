import { describe, expect, test } from 'vitest';
import { canonicalJson, imageRef, type RecipeInputs, recipeHash } from '../src/images/hash.js';
import { IMAGE_NAMES, RECIPES, type Recipe } from '../src/images/recipes.js';

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

  test('gives every image its own hash, so images never share a tag by accident', () => {
    const hashes = IMAGE_NAMES.map((n) =>
      recipeHash(RECIPES[n], RECIPES[n].kind === 'busybox' ? busyboxInputs : nodeInputs),
    );
    expect(new Set(hashes).size).toBe(IMAGE_NAMES.length);
  });

  test('names images kubelet-harness/<name>:<hash>', () => {
    expect(imageRef(RECIPES.pause, '0123456789ab')).toBe('kubelet-harness/pause:0123456789ab');
  });
});
