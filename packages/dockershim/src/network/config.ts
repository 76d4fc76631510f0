// CNI network configurations as libcni reads them: a .conflist is a named list of plugins; a
// .conf (or .json) is one plugin, made a list of one. The default network is the first valid file
// of the conf dir in name order whose plugins all exist and support its cniVersion.
import { readdir, readFile, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { execPlugin, findPlugin } from './exec.js';

export type JsonObject = Record<string, unknown>;

export interface PluginConf {
  type: string;
  /** Capabilities the plugin declares: runtimeConfig carries the runtime's data for these. */
  capabilities: Record<string, boolean>;
  /** The plugin's configuration as written. */
  raw: JsonObject;
}

export interface NetworkConfigList {
  name: string;
  /** As written; a list without one is CNI 0.1.0. */
  cniVersion: string;
  plugins: PluginConf[];
  /** The list's JSON, as libcni caches it with a result. */
  bytes: string;
}

/** The extensions libcni reads, as the kubelet's and cri-dockerd's CNI plugin ask. */
const CONF_EXTENSIONS = new Set(['.conf', '.conflist', '.json']);

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseJsonObject(text: string, what: string): JsonObject {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new Error(`error parsing ${what}: ${(err as Error).message}`);
  }
  if (!isObject(v)) throw new Error(`error parsing ${what}: not a JSON object`);
  return v;
}

function pluginConf(raw: unknown, what: string): PluginConf {
  if (!isObject(raw)) throw new Error(`error parsing ${what}: not a JSON object`);
  if (typeof raw.type !== 'string' || raw.type === '')
    throw new Error(`error parsing ${what}: missing 'type'`);
  const capabilities: Record<string, boolean> = {};
  if (raw.capabilities !== undefined) {
    if (!isObject(raw.capabilities))
      throw new Error(`error parsing ${what}: 'capabilities' is not an object`);
    for (const [k, v] of Object.entries(raw.capabilities)) capabilities[k] = v === true;
  }
  return { type: raw.type, capabilities, raw };
}

function versionOf(raw: JsonObject, what: string): string {
  if (raw.cniVersion === undefined) return '';
  if (typeof raw.cniVersion !== 'string') throw new Error(`error parsing ${what}: invalid cniVersion`);
  return raw.cniVersion;
}

/** A .conflist: `name`, `cniVersion` and a non-empty `plugins` list (libcni's ConfListFromBytes). */
export function parseConfList(text: string): NetworkConfigList {
  const raw = parseJsonObject(text, 'configuration list');
  if (typeof raw.name !== 'string' || raw.name === '')
    throw new Error('error parsing configuration list: no name');
  if (!Array.isArray(raw.plugins) || raw.plugins.length === 0)
    throw new Error('error parsing configuration list: no plugins in list');
  return {
    name: raw.name,
    cniVersion: versionOf(raw, 'configuration list'),
    plugins: raw.plugins.map((p, i) => pluginConf(p, `plugin config ${i}`)),
    bytes: text,
  };
}

/** A .conf: one plugin with its own `name`, made a list of one (libcni's ConfListFromConf). */
export function parseConf(text: string): NetworkConfigList {
  const raw = parseJsonObject(text, 'configuration');
  // Also catches a conflist written into a .conf file.
  const plugin = pluginConf(raw, "configuration (no 'type'; perhaps this is a .conflist?)");
  if (typeof raw.name !== 'string' || raw.name === '')
    throw new Error('error parsing configuration: no name');
  const cniVersion = versionOf(raw, 'configuration');
  const list = { name: raw.name, cniVersion, plugins: [raw] };
  return { name: raw.name, cniVersion, plugins: [plugin], bytes: JSON.stringify(list) };
}

/** What a conf dir looked like when it was last read: names, sizes and mtimes of its conf files. */
export async function confDirSignature(confDir: string): Promise<string> {
  const names = await confFiles(confDir);
  const parts = await Promise.all(
    names.map(async (n) => {
      const st = await stat(join(confDir, n)).catch(() => undefined);
      return `${n}:${st?.size ?? -1}:${st?.mtimeMs ?? -1}`;
    }),
  );
  return parts.join('\n');
}

/** The conf files of a directory, sorted by name; none when it does not exist. */
async function confFiles(confDir: string): Promise<string[]> {
  const entries = await readdir(confDir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  return entries
    .filter((e) => !e.isDirectory() && CONF_EXTENSIONS.has(extname(e.name)))
    .map((e) => e.name)
    .sort();
}

/**
 * libcni's ValidateNetworkList: every plugin exists in the bin dirs and lists the configuration's
 * version among those its VERSION command supports.
 */
export async function validateNetwork(list: NetworkConfigList, binDirs: readonly string[]): Promise<void> {
  const version = list.cniVersion || '0.1.0';
  const deadline = Date.now() + 10_000;
  for (const p of list.plugins) {
    const path = await findPlugin(p.type, binDirs);
    const out = await execPlugin(
      path,
      JSON.stringify({ cniVersion: version }),
      { command: 'VERSION', containerId: '', netns: '', ifName: '', args: [], binDirs },
      deadline,
    );
    let supported: unknown;
    try {
      supported = (JSON.parse(out) as { supportedVersions?: unknown }).supportedVersions;
    } catch {
      throw new Error(`plugin type=${JSON.stringify(p.type)} answered VERSION with ${JSON.stringify(out)}`);
    }
    if (!Array.isArray(supported) || !supported.includes(version))
      throw new Error(
        `plugin type=${JSON.stringify(p.type)} does not support config version ${JSON.stringify(version)}`,
      );
  }
}

export type LoadResult = { network: NetworkConfigList; file: string } | { error: string };

/**
 * The default network: the first file of `confDir`, in name order, that parses, has plugins and
 * validates (as the kubelet's CNI plugin and cri-dockerd pick it). Otherwise why none did.
 */
export async function loadDefaultNetwork(confDir: string, binDirs: readonly string[]): Promise<LoadResult> {
  const names = await confFiles(confDir);
  if (names.length === 0) return { error: `no network config found in ${confDir}` };
  const problems: string[] = [];
  for (const n of names) {
    const file = join(confDir, n);
    try {
      const text = await readFile(file, 'utf8');
      const network = n.endsWith('.conflist') ? parseConfList(text) : parseConf(text);
      await validateNetwork(network, binDirs);
      return { network, file };
    } catch (err) {
      problems.push(`${n}: ${(err as Error).message}`);
    }
  }
  return { error: `no valid networks found in ${confDir} (${problems.join('; ')})` };
}
