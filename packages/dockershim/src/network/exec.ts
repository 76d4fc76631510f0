// Running one CNI plugin binary, as libcni's invoke package does: the CNI_* environment, the
// network configuration on stdin, the result (or CNI's JSON error) on stdout.
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';

export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION';

export interface PluginInvocation {
  command: CniCommand;
  containerId: string;
  /** Path of the network namespace; empty for a DEL whose namespace is gone (CNI allows it). */
  netns: string;
  ifName: string;
  /** CNI_ARGS as key/value pairs, joined "K=V;K=V". */
  args: readonly (readonly [string, string])[];
  /** Directories searched for plugins, passed as CNI_PATH. */
  binDirs: readonly string[];
}

/** CNI's error result `{code, msg, details}`: what a failing plugin prints on stdout. */
export class CniPluginError extends Error {
  constructor(
    readonly code: number,
    readonly msg: string,
    readonly details = '',
  ) {
    // libcni's types.Error: the plugin's words, its details after "; ".
    super(details ? `${msg}; ${details}` : msg);
  }
}

/** A plugin that did not answer within the operation's deadline (it was killed). */
export class CniTimeoutError extends Error {}

/** libcni's FindInPath: the first existing file named `type` in the bin dirs. */
export async function findPlugin(type: string, binDirs: readonly string[]): Promise<string> {
  // A type with a path in it would escape the bin dirs.
  if (type === '' || type.includes('/')) throw new Error(`invalid plugin type ${JSON.stringify(type)}`);
  for (const dir of binDirs) {
    const path = join(dir, type);
    const st = await stat(path).catch(() => undefined);
    if (st?.isFile()) return path;
  }
  throw new Error(`failed to find plugin ${JSON.stringify(type)} in path [${binDirs.join(' ')}]`);
}

/** How often and how long to wait while a plugin binary is being replaced ("text file busy"). */
const BUSY_RETRIES = 5;
const BUSY_WAIT_MS = 1_000;

/**
 * Runs `plugin` with `stdin` and returns its stdout. A non-zero exit becomes a CniPluginError
 * carrying the plugin's own message; past `deadline` (epoch ms) the plugin is killed and a
 * CniTimeoutError names it.
 */
export async function execPlugin(
  plugin: string,
  stdin: string,
  inv: PluginInvocation,
  deadline: number,
): Promise<string> {
  const env = {
    ...process.env,
    CNI_COMMAND: inv.command,
    CNI_CONTAINERID: inv.containerId,
    CNI_NETNS: inv.netns,
    CNI_ARGS: inv.args.map(([k, v]) => `${k}=${v}`).join(';'),
    CNI_IFNAME: inv.ifName,
    CNI_PATH: inv.binDirs.join(':'),
  };
  for (let attempt = 0; ; attempt++) {
    try {
      return await runOnce(plugin, stdin, env, deadline);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ETXTBSY' || attempt >= BUSY_RETRIES) throw err;
      await new Promise((r) => setTimeout(r, BUSY_WAIT_MS));
    }
  }
}

function runOnce(plugin: string, stdin: string, env: NodeJS.ProcessEnv, deadline: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(plugin, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    const timer = setTimeout(
      () => {
        timedOut = true;
        child.kill('SIGKILL');
      },
      Math.max(0, deadline - Date.now()),
    );
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    // A plugin that exits before reading all of stdin makes the write fail; its exit says why.
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const stdout = Buffer.concat(out).toString('utf8');
      if (timedOut) return reject(new CniTimeoutError(`plugin ${plugin} did not finish in time; killed`));
      if (code === 0) return resolve(stdout);
      reject(pluginError(code, signal, stdout, Buffer.concat(err).toString('utf8')));
    });
  });
}

/** libcni's RawExec.pluginErr: the JSON error on stdout, else what stderr says. */
function pluginError(
  code: number | null,
  signal: NodeJS.Signals | null,
  stdout: string,
  stderr: string,
): CniPluginError {
  const status = signal ? `signal: ${signal}` : `exit status ${code}`;
  if (stdout.trim() === '') {
    return stderr.trim() === ''
      ? new CniPluginError(0, `netplugin failed with no error message: ${status}`)
      : new CniPluginError(0, `netplugin failed: ${JSON.stringify(stderr)}: ${status}`);
  }
  try {
    const e = JSON.parse(stdout) as { code?: unknown; msg?: unknown; details?: unknown };
    return new CniPluginError(
      typeof e.code === 'number' ? e.code : 0,
      typeof e.msg === 'string' ? e.msg : '',
      typeof e.details === 'string' ? e.details : '',
    );
  } catch (parseErr) {
    return new CniPluginError(
      0,
      `netplugin failed but error parsing its diagnostic message ${JSON.stringify(stdout)}: ${(parseErr as Error).message}`,
    );
  }
}
