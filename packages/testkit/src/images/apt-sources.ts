import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** One `deb` source from the machine's apt configuration. */
export interface AptSource {
  uri: string;
  suites: string[];
  components: string[];
  file: string;
}

/** Parses deb822 `.sources` text (blank-line separated stanzas); only `deb` types are kept. */
export function parseDeb822Sources(text: string, file: string): AptSource[] {
  const sources: AptSource[] = [];
  for (const stanza of text.split(/\n\s*\n/)) {
    const fields = new Map<string, string>();
    let last: string | undefined;
    for (const raw of stanza.split('\n')) {
      if (raw.startsWith('#') || raw.trim() === '') continue;
      if (/^\s/.test(raw) && last) {
        fields.set(last, `${fields.get(last)} ${raw.trim()}`);
        continue;
      }
      const colon = raw.indexOf(':');
      if (colon < 0) continue;
      last = raw.slice(0, colon).trim().toLowerCase();
      fields.set(last, raw.slice(colon + 1).trim());
    }
    const words = (key: string) => (fields.get(key) ?? '').split(/\s+/).filter(Boolean);
    if (!words('types').includes('deb') || fields.get('enabled')?.toLowerCase() === 'no') continue;
    for (const uri of words('uris')) {
      sources.push({ uri, suites: words('suites'), components: words('components'), file });
    }
  }
  return sources;
}

/** Parses one-line `sources.list` text: `deb [options] URI suite component...`. */
export function parseOneLineSources(text: string, file: string): AptSource[] {
  const sources: AptSource[] = [];
  for (const raw of text.split('\n')) {
    const line = raw
      .replace(/#.*/, '')
      .replace(/\[[^\]]*\]/, ' ')
      .trim();
    const [type, uri, suite, ...components] = line.split(/\s+/);
    if (type !== 'deb' || !uri || !suite) continue;
    sources.push({ uri, suites: [suite], components, file });
  }
  return sources;
}

/**
 * Picks the mirror that serves `suite` with the `main` component. A suite the machine does not
 * list itself (trixie or forky on a bookworm host) comes from the mirror of its own release: one
 * Debian archive serves every release, while `-security` and `-updates` suites live elsewhere or
 * hold only updates.
 */
export function pickMirror(sources: readonly AptSource[], suite: string): string | undefined {
  const main = sources.filter((s) => s.components.includes('main'));
  return (
    main.find((s) => s.suites.includes(suite))?.uri ??
    main.find((s) => s.suites.some((listed) => !listed.includes('-') && !listed.includes('/')))?.uri
  );
}

/**
 * The Debian mirror debootstrap should use for `suite`, read from the machine's apt sources
 * (so the build uses whatever mirror or proxy this machine is allowed to reach). KH_DEBIAN_MIRROR
 * overrides it.
 */
export async function debianMirror(suite: string, aptDir = '/etc/apt'): Promise<string> {
  const override = process.env.KH_DEBIAN_MIRROR;
  if (override) return override;
  const sources: AptSource[] = [];
  const listDir = join(aptDir, 'sources.list.d');
  const entries = await readdir(listDir).catch(() => [] as string[]);
  for (const name of entries.sort()) {
    const file = join(listDir, name);
    if (name.endsWith('.sources')) sources.push(...parseDeb822Sources(await readFile(file, 'utf8'), file));
    else if (name.endsWith('.list')) sources.push(...parseOneLineSources(await readFile(file, 'utf8'), file));
  }
  const main = join(aptDir, 'sources.list');
  const mainText = await readFile(main, 'utf8').catch(() => '');
  sources.push(...parseOneLineSources(mainText, main));
  const mirror = pickMirror(sources, suite);
  if (!mirror) {
    throw new Error(
      `No apt source for Debian "${suite}" (component main) in ${main} or ${listDir}/*.sources|*.list. ` +
        'Add one, or set KH_DEBIAN_MIRROR to a Debian mirror URL.',
    );
  }
  return mirror;
}
