import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import type { DockerClient } from '../src/docker/client.js';
import { CappedOutput, eventTimeNanos, jsonLines, LineDecoder, StreamType } from '../src/docker/stream.js';
import {
  ContainerLogCopier,
  formatCriLogLine,
  LogManager,
  parseCriLogLine,
  splitTimestamp,
  timestampToSince,
} from '../src/logs/copier.js';

function frame(type: number, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header.writeUInt8(type, 0);
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

describe('CRI log format', () => {
  const ts = '2026-11-22T23:15:00.551690878Z';

  it('writes a full line with the F tag and no trailing newline in the message', () => {
    expect(formatCriLogLine(ts, 'stdout', Buffer.from('hello\n')).toString()).toBe(`${ts} stdout F hello\n`);
    expect(formatCriLogLine(ts, 'stderr', Buffer.from('crlf\r\n')).toString()).toBe(`${ts} stderr F crlf\n`);
  });

  it('marks a line Docker split (no newline) as partial', () => {
    expect(formatCriLogLine(ts, 'stdout', Buffer.from('part')).toString()).toBe(`${ts} stdout P part\n`);
  });

  it('round-trips through the parser', () => {
    const line = formatCriLogLine(ts, 'stderr', Buffer.from('a b  c\n')).toString().trimEnd();
    expect(parseCriLogLine(line)).toEqual({ timestamp: ts, stream: 'stderr', tag: 'F', message: 'a b  c' });
    expect(parseCriLogLine('not a log line')).toBeUndefined();
  });

  it('splits the timestamp Docker prefixes to each entry', () => {
    const { timestamp, message } = splitTimestamp(Buffer.from(`${ts} hi there\n`));
    expect(timestamp).toBe(ts);
    expect(message.toString()).toBe('hi there\n');
    expect(() => splitTimestamp(Buffer.from('nospace'))).toThrow(/without timestamp/);
  });

  it('turns a timestamp into Docker’s since= value', () => {
    expect(timestampToSince(ts)).toBe('1795389300.551690878');
    expect(timestampToSince('2026-11-22T23:15:00Z')).toBe('1795389300.000000000');
  });
});

// Frame demuxing itself is @kh/apimachinery's FrameDecoder, tested there.
describe('docker stream decoding', () => {
  it('cuts raw TTY output at newlines and flushes the rest', () => {
    const d = new LineDecoder();
    expect(d.push(Buffer.from('a\nb')).map(String)).toEqual(['a\n']);
    expect(d.push(Buffer.from('c\n')).map(String)).toEqual(['bc\n']);
    d.push(Buffer.from('tail'));
    expect(d.flush()?.toString()).toBe('tail');
    expect(d.flush()).toBeUndefined();
  });

  it('caps stdout and stderr under one shared budget', () => {
    const out = new CappedOutput(5);
    out.write(StreamType.Stdout, Buffer.from('abc'));
    out.write(StreamType.Stderr, Buffer.from('defg'));
    out.write(StreamType.Stdout, Buffer.from('h'));
    expect(Buffer.concat(out.stdout).toString()).toBe('abc');
    expect(Buffer.concat(out.stderr).toString()).toBe('de');
    expect(out.truncated).toBe(true);
  });

  it('reads newline-delimited JSON across chunk boundaries', async () => {
    async function* chunks() {
      yield Buffer.from('{"a":1}\n{"b"');
      yield Buffer.from(':2}\n{"timeNano":1795389300551690878}');
    }
    const seen = [];
    for await (const { value, raw } of jsonLines(chunks())) seen.push([value, raw]);
    expect(seen.slice(0, 2).map(([v]) => v)).toEqual([{ a: 1 }, { b: 2 }]);
    // Event times exceed 2^53: they are read from the raw text, exactly.
    expect(eventTimeNanos(String(seen[2]?.[1]), 0)).toBe(1795389300551690878n);
    expect(eventTimeNanos('{"time":12}', 12)).toBe(12_000_000_000n);
  });
});

describe('ContainerLogCopier', () => {
  it('writes nothing once stopped, even when its Docker stream does not end', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-logcopier-'));
    const path = join(dir, 'c', '0.log');
    // A follow stream that ignores destroy(), as a stream outliving a shim's shutdown would.
    const stream = new PassThrough();
    stream.destroy = () => stream;
    const docker = { containerLogs: async () => stream } as unknown as DockerClient;
    const copier = new ContainerLogCopier(docker, 'c1', path, false, () => {});
    const ts = (s: number) => `2026-11-22T23:15:0${s}.000000000Z`;
    try {
      stream.write(frame(StreamType.Stdout, `${ts(1)} before\n`));
      await vi.waitFor(() => expect(readFileSync(path, 'utf8')).toContain('before'));
      copier.stop();
      stream.write(frame(StreamType.Stdout, `${ts(2)} after\n`));
      stream.end();
      await copier.done;
      expect(readFileSync(path, 'utf8')).toBe(`${ts(1)} stdout F before\n`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ContainerLogCopier reads again', () => {
  const ts = (s: number) => `2026-11-22T23:15:0${s}.000000000Z`;
  const entry = (s: number, text: string) => frame(StreamType.Stdout, `${ts(s)} ${text}\n`);
  const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });

  it('follows again after a cut stream and repeats a failed catch-up read, writing every entry once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-logretry-'));
    const path = join(dir, 'c', '0.log');
    const calls: { follow: boolean; since?: string }[] = [];
    const docker = {
      containerLogs: async (_id: string, options: { follow: boolean; since?: string }) => {
        calls.push(options);
        const s = new PassThrough();
        switch (calls.length) {
          case 1: // the first follow delivers one entry, then its connection drops
            s.write(entry(1, 'one'));
            setTimeout(() => s.destroy(reset()), 20);
            return s;
          case 2: // followed again from `one` (Docker's since is inclusive); the container stops
            s.end(Buffer.concat([entry(1, 'one'), entry(2, 'two')]));
            return s;
          case 3: // the catch-up read fails before Docker answers
            throw reset();
          default: // and made again, it finds the last line the follow missed
            s.end(Buffer.concat([entry(2, 'two'), entry(3, 'three')]));
            return s;
        }
      },
    } as unknown as DockerClient;
    const errors: string[] = [];
    const copier = new ContainerLogCopier(docker, 'c1', path, false, (err) => errors.push(String(err)));
    try {
      await copier.done;
      const messages = readFileSync(path, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => parseCriLogLine(l)?.message);
      expect(messages).toEqual(['one', 'two', 'three']);
      expect(calls.map((c) => c.follow)).toEqual([true, true, false, false]);
      // From a little before `one` (Docker's since is inclusive, and a stream may be logged late).
      expect(calls[1]?.since).toBe('1795389299.000000000');
      expect(errors).toHaveLength(2);
      expect(errors[0]).toMatch(/follow failed \(attempt 1 of 5\), reading again: .*ECONNRESET/);
      expect(errors[1]).toMatch(/catch-up read failed \(attempt 1 of 5\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives up at once, and says so, when Docker answers that the container is gone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-logretry-'));
    let calls = 0;
    const docker = {
      containerLogs: async () => {
        calls++;
        throw Object.assign(new Error('No such container: c1'), { statusCode: 404 });
      },
    } as unknown as DockerClient;
    const errors: string[] = [];
    const copier = new ContainerLogCopier(docker, 'c1', join(dir, 'c/0.log'), false, (err) =>
      errors.push(String(err)),
    );
    try {
      await copier.done;
      expect(calls).toBe(1);
      expect(errors).toEqual(['Error: No such container: c1']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ContainerLogCopier resumes per stream', () => {
  const ts = (ms: number) => `2026-11-22T23:15:01.${String(ms).padStart(3, '0')}000000Z`;
  type Entry = { stream: 'stdout' | 'stderr'; at: number; text: string };
  const chunk = (e: Entry) =>
    frame(e.stream === 'stderr' ? StreamType.Stderr : StreamType.Stdout, `${ts(e.at)} ${e.text}`);
  /** Docker's log in its file order; a read returns what `since` keeps, in that order. */
  function dockerWith(log: Entry[], cutFollowAfter?: number) {
    const calls: { follow: boolean; since?: string }[] = [];
    const docker = {
      containerLogs: async (_id: string, options: { follow: boolean; since?: string }) => {
        calls.push(options);
        const since = options.since ? Number(options.since) : 0;
        const kept = log.filter((e) => Date.parse(ts(e.at)) / 1000 >= since - 1e-6).map(chunk);
        const s = new PassThrough();
        if (calls.length === 1 && cutFollowAfter !== undefined) {
          s.write(Buffer.concat(kept.slice(0, cutFollowAfter)));
          setTimeout(
            () => s.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })),
            20,
          );
        } else {
          s.end(Buffer.concat(kept));
        }
        return s;
      },
    } as unknown as DockerClient;
    return { docker, calls };
  }
  const lines = (path: string) =>
    readFileSync(path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const e = parseCriLogLine(l);
        return `${e?.stream} ${e?.tag} ${e?.message}`;
      });

  it('copies stderr logged ahead of an earlier-stamped stdout once, through the catch-up read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-logorder-'));
    const path = join(dir, 'c', '0.log');
    // `echo to-stdout; echo to-stderr >&2` on a busy node: Docker's stderr goroutine logged first.
    const { docker, calls } = dockerWith([
      { stream: 'stderr', at: 2, text: 'to-stderr\n' },
      { stream: 'stdout', at: 1, text: 'to-stdout\n' },
    ]);
    try {
      await new ContainerLogCopier(docker, 'c1', path, false, () => {}).done;
      expect(calls.map((c) => c.follow)).toEqual([true, false]);
      expect(lines(path)).toEqual(['stderr F to-stderr', 'stdout F to-stdout']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('resumes inside a line Docker split, whose parts share one timestamp (the follow is cut after two)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-logsplit-'));
    const path = join(dir, 'c', '0.log');
    const { docker } = dockerWith(
      [
        { stream: 'stdout', at: 1, text: 'part one ' },
        { stream: 'stdout', at: 1, text: 'part two ' },
        { stream: 'stdout', at: 1, text: 'end\n' },
        { stream: 'stderr', at: 2, text: 'after\n' },
      ],
      2,
    );
    try {
      await new ContainerLogCopier(docker, 'c1', path, false, () => {}).done;
      expect(lines(path)).toEqual([
        'stdout P part one ',
        'stdout P part two ',
        'stdout F end',
        'stderr F after',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('after a shim restart, resumes each stream after its own last entry in the file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-logresume-'));
    const path = join(dir, 'c', '0.log');
    // The previous shim wrote `a` and `c`; Docker had logged `b` (stamped before `c`) after them.
    const log: Entry[] = [
      { stream: 'stdout', at: 1, text: 'a\n' },
      { stream: 'stderr', at: 3, text: 'c\n' },
      { stream: 'stdout', at: 2, text: 'b\n' },
    ];
    mkdirSync(join(dir, 'c'));
    writeFileSync(path, `${ts(1)} stdout F a\n${ts(3)} stderr F c\n`);
    const { docker } = dockerWith(log);
    try {
      await new ContainerLogCopier(docker, 'c1', path, false, () => {}).done;
      expect(lines(path)).toEqual(['stdout F a', 'stderr F c', 'stdout F b']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('LogManager.drained', () => {
  it("waits for an exited container's copier, and bounds the wait once per container, not per call", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-logdrain-'));
    const streams = new Map<string, PassThrough>();
    const docker = {
      // The follow stream stays open until a test ends it; the catch-up read after it is empty.
      containerLogs: async (id: string, { follow }: { follow: boolean }) => {
        const s = new PassThrough();
        if (follow) streams.set(id, s);
        else s.end();
        return s;
      },
    } as unknown as DockerClient;
    const reports: string[] = [];
    const logs = new LogManager(docker, (id, err) => reports.push(`${id}: ${String(err)}`));
    try {
      // A copier whose stream ends while drained() waits: it returns when the copy is done.
      const done = logs.follow('ends', join(dir, 'ends/0.log'), false);
      await vi.waitFor(() => expect(streams.has('ends')).toBe(true));
      let drained = false;
      const waiting = logs.drained('ends', 60_000).then(() => {
        drained = true;
      });
      await new Promise((r) => setTimeout(r, 50));
      expect(drained).toBe(false);
      streams.get('ends')?.end();
      await waiting;
      await done.done;
      // A copier whose stream never ends: the first call waits out the bound, later ones return.
      logs.follow('hangs', join(dir, 'hangs/0.log'), false);
      let first = false;
      const firstWait = logs.drained('hangs', 300).then(() => {
        first = true;
      });
      await new Promise((r) => setTimeout(r, 50));
      expect(first).toBe(false);
      await firstWait;
      let second = false;
      await Promise.race([
        logs.drained('hangs', 300).then(() => {
          second = true;
        }),
        new Promise((r) => setTimeout(r, 100)),
      ]);
      expect(second).toBe(true);
      // Two statuses waiting at once on a copier that hangs: both return at the bound, one report.
      logs.follow('twice', join(dir, 'twice/0.log'), false);
      await Promise.all([logs.drained('twice', 200), logs.drained('twice', 200)]);
      // Only the copiers that ran out their bound are reported, each once.
      expect(reports).toEqual([
        'hangs: Error: the log is not complete 300 ms after a status first found the container stopped',
        'twice: Error: the log is not complete 200 ms after a status first found the container stopped',
      ]);
    } finally {
      await logs.close(100);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
