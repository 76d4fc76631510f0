import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import {
  debianMirror,
  parseDeb822Sources,
  parseOneLineSources,
  pickMirror,
} from '../src/images/apt-sources.js';

const DEB822 = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main

Types: deb-src
URIs: http://src.example/debian
Suites: bookworm
Components: main
`;

describe('apt sources', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    vi.unstubAllEnvs();
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });

  async function aptDir(files: Record<string, string>): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'kh-apt-'));
    dirs.push(dir);
    await mkdir(join(dir, 'sources.list.d'));
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    return dir;
  }

  test('reads deb822 stanzas, skipping comments and deb-src', () => {
    const sources = parseDeb822Sources(DEB822, 'debian.sources');
    expect(sources.map((s) => [s.uri, s.suites])).toEqual([
      ['http://deb.debian.org/debian', ['bookworm', 'bookworm-updates']],
      ['http://deb.debian.org/debian-security', ['bookworm-security']],
    ]);
    expect(pickMirror(sources, 'bookworm')).toBe('http://deb.debian.org/debian');
  });

  test('reads one-line sources.list entries with options and comments', () => {
    const text = `# deb http://commented.example/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main contrib # trailing
deb-src http://src.example/debian bookworm main
deb http://other.example/debian trixie main`;
    const sources = parseOneLineSources(text, 'sources.list');
    expect(sources.map((s) => s.uri)).toEqual([
      'http://mirror.example/debian',
      'http://other.example/debian',
    ]);
    expect(pickMirror(sources, 'bookworm')).toBe('http://mirror.example/debian');
    expect(pickMirror(sources, 'trixie')).toBe('http://other.example/debian');
  });

  test("a release the machine does not list comes from its own release's mirror, never -security's", () => {
    const sources = parseDeb822Sources(DEB822, 'debian.sources');
    expect(pickMirror(sources, 'trixie')).toBe('http://deb.debian.org/debian');
    expect(pickMirror(sources, 'forky')).toBe('http://deb.debian.org/debian');
    const securityOnly = parseOneLineSources(
      'deb http://sec.example/debian-security bookworm-security main',
      'x',
    );
    expect(pickMirror(securityOnly, 'trixie')).toBeUndefined();
  });

  test('finds the mirror in sources.list.d/*.sources, then sources.list', async () => {
    const dir = await aptDir({ 'sources.list.d/debian.sources': DEB822 });
    expect(await debianMirror('bookworm', dir)).toBe('http://deb.debian.org/debian');
    const legacy = await aptDir({ 'sources.list': 'deb http://legacy.example/debian bookworm main\n' });
    expect(await debianMirror('bookworm', legacy)).toBe('http://legacy.example/debian');
  });

  test('KH_DEBIAN_MIRROR overrides the machine sources', async () => {
    vi.stubEnv('KH_DEBIAN_MIRROR', 'http://override.example/debian');
    expect(await debianMirror('bookworm', await aptDir({}))).toBe('http://override.example/debian');
  });

  test('explains what to do when no source serves the suite', async () => {
    vi.stubEnv('KH_DEBIAN_MIRROR', '');
    const dir = await aptDir({
      'sources.list': 'deb http://sec.example/debian-security trixie-security main\n',
    });
    await expect(debianMirror('bookworm', dir)).rejects.toThrow(
      /No apt source for Debian "bookworm".*KH_DEBIAN_MIRROR/s,
    );
  });
});
