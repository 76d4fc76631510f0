// Terminal resize events: the client writes a stream of JSON objects ({"Width":80,"Height":24},
// as Go's json.Encoder does, each followed by a newline) on the resize stream or channel.
import type { TerminalSize } from '../runtime/streaming_runtime.js';

/** An object longer than this is not a terminal size; decoding stops. */
const MAX_OBJECT_BYTES = 4096;

/**
 * Yields each valid size from a byte stream of JSON objects. Objects may be split across chunks
 * or share one. Like the kubelet, decoding stops at the first syntax error; objects whose Width
 * or Height (any letter case, as Go's decoder accepts) is not a 16-bit unsigned integer are skipped.
 */
export async function* decodeResizeEvents(
  source: AsyncIterable<Buffer | string> | Iterable<Buffer | string>,
): AsyncGenerator<TerminalSize> {
  let text = '';
  let depth = 0;
  let inString = false;
  let escaped = false;
  for await (const chunk of source) {
    for (const ch of typeof chunk === 'string' ? chunk : chunk.toString('utf8')) {
      if (depth === 0) {
        if (/\s/.test(ch)) continue;
        if (ch !== '{') return;
      }
      text += ch;
      if (text.length > MAX_OBJECT_BYTES) return;
      if (inString) {
        if (escaped) escaped = false;
        else if (ch === '\\') escaped = true;
        else if (ch === '"') inString = false;
        continue;
      }
      if (ch === '"') inString = true;
      else if (ch === '{' || ch === '[') depth++;
      else if (ch === '}' || ch === ']') depth--;
      if (depth > 0) continue;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        return;
      }
      text = '';
      const size = toTerminalSize(value);
      if (size) yield size;
    }
  }
}

function toTerminalSize(value: unknown): TerminalSize | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const field = (name: string) => Object.entries(value).find(([k]) => k.toLowerCase() === name)?.[1];
  const width = field('width');
  const height = field('height');
  const ok = (n: unknown): n is number =>
    Number.isInteger(n) && (n as number) >= 0 && (n as number) <= 0xffff;
  return ok(width) && ok(height) ? { width, height } : undefined;
}
