// Reads the CRI calls our agent logged on its node (`node-agent --cri-call-log`, one ASCII JSON line
// per call). The file only grows (a restarted agent appends) until the agent rotates it to
// `<path>.1`, so the reader keeps the file's inode and a byte offset, and each read returns only
// the calls written since the last one: cheap enough to run after every scenario.
import type { CriCallRecord } from '@kh/node-agent/command';
import type { NodeHost } from './host.js';

/** Where the harness tells every agent to log its CRI calls. */
export const AGENT_CRI_CALL_LOG = '/var/log/kh/cri-calls.jsonl';

/** One CRI call the agent made. `at` is when it started (epoch ms). */
export interface AgentCriCall {
  at: number;
  method: string;
  durationMs: number;
  code: string;
  error?: string;
}

/** Parses one line of the log (the agent's `CriCallRecord`); undefined for anything else. */
export function parseCriCallLine(line: string): AgentCriCall | undefined {
  let rec: Partial<Record<keyof CriCallRecord, unknown>>;
  try {
    rec = JSON.parse(line) as typeof rec;
  } catch {
    return undefined;
  }
  const at = typeof rec.time === 'string' ? Date.parse(rec.time) : Number.NaN;
  if (
    !Number.isFinite(at) ||
    typeof rec.method !== 'string' ||
    typeof rec.durationMs !== 'number' ||
    typeof rec.code !== 'string'
  )
    return undefined;
  return {
    at,
    method: rec.method,
    durationMs: rec.durationMs,
    code: rec.code,
    ...(typeof rec.error === 'string' ? { error: rec.error } : {}),
  };
}

// Prints "KH <inode> <offset> <bytes> <current|rotated>", then that byte range of the file the last read was in,
// then an empty line (when the range ended on a newline) and END. When that file was rotated away
// and read to its end, or is gone, it moves on to the current file from offset 0.
const READ_SCRIPT = `
f=$1; ino=$2; off=$3; max=$4
cur=$(stat -c %i "$f" 2>/dev/null) || cur=none
src=$f; where=current
if [ "$cur" != "$ino" ]; then
  old=$(stat -c %i "$f.1" 2>/dev/null) || old=none
  size=$(stat -c %s "$f.1" 2>/dev/null) || size=0
  if [ "$old" = "$ino" ] && [ "$off" -lt "$size" ]; then src=$f.1; cur=$old; where=rotated; else off=0; fi
fi
if [ "$cur" = none ]; then echo "KH none 0 0 current"; echo; echo END; exit 0; fi
size=$(stat -c %s "$src")
n=$((size - off)); [ "$n" -gt "$max" ] && n=$max; [ "$n" -lt 0 ] && n=0
echo "KH $cur $off $n $where"
tail -c +$((off + 1)) "$src" | head -c "$n"
echo; echo END
`;

export class CriCallLogReader {
  private inode = '';
  private offset = 0;

  constructor(
    private readonly host: Pick<NodeHost, 'exec'>,
    readonly path = AGENT_CRI_CALL_LOG,
    /** Bytes per exec; a read loops until it has caught up. */
    private readonly chunkBytes = 4 * 1024 * 1024,
  ) {}

  /** The calls logged since the last read, oldest first. A missing file yields none. */
  async readNew(): Promise<AgentCriCall[]> {
    const calls: AgentCriCall[] = [];
    // Bounded: a file that keeps growing faster than it is read is picked up by the next read.
    for (let i = 0; i < 64; i++) {
      const r = await this.host.exec([
        'sh',
        '-c',
        READ_SCRIPT,
        'kh-read',
        this.path,
        this.inode || 'none',
        String(this.offset),
        String(this.chunkBytes),
      ]);
      if (r.exitCode !== 0) throw new Error(`reading ${this.path} on the node failed: ${r.output}`);
      const lines = r.output.split('\n');
      const header = /^KH (\S+) (\d+) (\d+) (current|rotated)$/.exec(lines[0] ?? '');
      const end = lines.lastIndexOf('END');
      if (!header || end < 1)
        throw new Error(`unexpected output reading ${this.path}: ${r.output.slice(0, 200)}`);
      const [, inode, offset, bytes, where] = header as unknown as [string, string, string, string, string];
      if (inode === 'none') return calls;
      const body = lines.slice(1, end);
      // The script's own newline follows the range: an empty last line means the range ended on
      // a line break; anything else is a line the agent was still writing, read again next time.
      const partial = body.pop() ?? '';
      const consumed = Number(bytes) - partial.length;
      for (const line of body) {
        const call = parseCriCallLine(line);
        if (call) calls.push(call);
      }
      const moved = inode !== this.inode || Number(offset) !== this.offset;
      this.inode = inode;
      this.offset = Number(offset) + consumed;
      const caughtUp = where === 'current' && Number(bytes) < this.chunkBytes;
      if (caughtUp || (consumed === 0 && !moved)) return calls;
    }
    return calls;
  }
}
