import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Fake CNI plugins for unit tests: small Node scripts that record every invocation (CNI_*
// environment and stdin) and answer as the test scripts them, so the client's side of the CNI
// protocol is checked without bridges, namespaces or containers.

export interface FakeCall {
  type: string;
  command: string;
  containerId: string;
  netns: string;
  ifName: string;
  args: string;
  path: string;
  stdin: Record<string, unknown>;
}

/** What a fake plugin does on ADD or DEL. */
export type FakeBehaviour = 'ok' | 'fail' | 'hang' | 'garbage' | 'stderr';

const SCRIPT = `
const fs = require('node:fs');
const path = require('node:path');
const dir = path.dirname(process.argv[1]);
const type = path.basename(process.argv[1]);
const stdin = fs.readFileSync(0, 'utf8');
const env = process.env;
const conf = JSON.parse(stdin);
const script = JSON.parse(fs.readFileSync(path.join(dir, 'script.json'), 'utf8'));
const mine = script[type] || {};
if (env.CNI_COMMAND === 'VERSION') {
  process.stdout.write(JSON.stringify({ cniVersion: '1.0.0', supportedVersions: mine.versions || ['0.1.0', '0.2.0', '0.3.0', '0.3.1', '0.4.0', '1.0.0'] }));
  process.exit(0);
}
fs.appendFileSync(path.join(dir, 'calls.jsonl'), JSON.stringify({
  type, command: env.CNI_COMMAND, containerId: env.CNI_CONTAINERID, netns: env.CNI_NETNS,
  ifName: env.CNI_IFNAME, args: env.CNI_ARGS, path: env.CNI_PATH, stdin: conf,
}) + '\\n');
const behaviour = mine[env.CNI_COMMAND] || 'ok';
if (behaviour === 'hang') setInterval(() => {}, 1000);
else if (behaviour === 'fail') {
  process.stdout.write(JSON.stringify({ cniVersion: conf.cniVersion, code: 11, msg: type + ' says no', details: 'try again later' }));
  process.exit(1);
} else if (behaviour === 'stderr') {
  process.stderr.write('panic: ' + type + ' crashed');
  process.exit(2);
} else if (behaviour === 'garbage') {
  process.stdout.write('not json');
  process.exit(0);
} else if (env.CNI_COMMAND === 'ADD') {
  const result = conf.prevResult || (type === 'loopback'
    ? { cniVersion: conf.cniVersion, ip4: { ip: '127.0.0.1/8' } }
    : { cniVersion: conf.cniVersion, interfaces: [{ name: env.CNI_IFNAME }],
        ips: (mine.ips || ['10.1.2.3/24']).map((address) => ({ address, interface: 0 })) });
  process.stdout.write(JSON.stringify({ ...result, seen: [...(result.seen || []), type] }));
}
`;

/** A bin dir of fake plugins, the conf and cache dirs next to it, and the record of calls. */
export class FakeCni {
  private constructor(readonly dir: string) {}

  static async create(types: readonly string[]): Promise<FakeCni> {
    const dir = await mkdtemp(join(tmpdir(), 'kh-fake-cni-'));
    const cni = new FakeCni(dir);
    await mkdir(cni.binDir);
    await mkdir(cni.confDir);
    await cni.script({});
    for (const t of types) await cni.addPlugin(t);
    return cni;
  }

  get binDir(): string {
    return join(this.dir, 'bin');
  }

  get confDir(): string {
    return join(this.dir, 'net.d');
  }

  get cacheDir(): string {
    return join(this.dir, 'cache');
  }

  async addPlugin(type: string): Promise<void> {
    const path = join(this.binDir, type);
    await writeFile(path, `#!${process.execPath}\n${SCRIPT}`);
    await chmod(path, 0o755);
  }

  /** Per plugin type: behaviour per command, the IPs its ADD returns, the versions VERSION lists. */
  async script(
    s: Record<
      string,
      { ADD?: FakeBehaviour; DEL?: FakeBehaviour; ips?: string[]; versions?: string[] } | undefined
    >,
  ): Promise<void> {
    await writeFile(join(this.binDir, 'script.json'), JSON.stringify(s));
  }

  async writeConf(name: string, conf: unknown): Promise<void> {
    await writeFile(join(this.confDir, name), typeof conf === 'string' ? conf : JSON.stringify(conf));
  }

  async calls(): Promise<FakeCall[]> {
    const text = await readFile(join(this.binDir, 'calls.jsonl'), 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as FakeCall);
  }

  async clearCalls(): Promise<void> {
    await rm(join(this.binDir, 'calls.jsonl'), { force: true });
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** A conflist of fake plugins. */
export function conflist(name: string, types: readonly string[], extra: Record<string, unknown>[] = []) {
  return {
    cniVersion: '0.4.0',
    name,
    plugins: types.map((type, i) => ({ type, ...(extra[i] ?? {}) })),
  };
}
