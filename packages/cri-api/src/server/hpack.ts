/**
 * The HPACK (RFC 7541) decoding a request header block needs, and a literal-only encoder.
 *
 * A proxy that rewrites request headers must decode every block with the client's dynamic table,
 * since later blocks refer to entries earlier ones inserted. It re-encodes each block as literals
 * that are never added to the table, so the server's decoder table stays empty and never has to
 * agree with the client's.
 */

/** A decoding error: HTTP/2 answers it with a connection error COMPRESSION_ERROR. */
export class HpackError extends Error {
  constructor(message: string) {
    super(`HPACK: ${message}`);
    this.name = 'HpackError';
  }
}

export interface HeaderField {
  name: Buffer;
  value: Buffer;
  /** Sent as "never indexed": an intermediary must forward it the same way (RFC 7541 6.2.3). */
  neverIndex: boolean;
}

// RFC 7541 Appendix A.
const STATIC_TABLE: readonly (readonly [string, string])[] = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];
const STATIC_FIELDS = STATIC_TABLE.map(([n, v]) => ({ name: Buffer.from(n), value: Buffer.from(v) }));
const STATIC_NAME_INDEX = new Map<string, number>();
STATIC_TABLE.forEach(([n], i) => {
  if (!STATIC_NAME_INDEX.has(n)) STATIC_NAME_INDEX.set(n, i + 1);
});

/**
 * Code lengths of symbols 0..255 and EOS (256), RFC 7541 Appendix B. The code is canonical (codes
 * of one length are consecutive in symbol order, shorter codes come first), so the lengths alone
 * determine every code.
 */
// biome-ignore format: a table
const HUFFMAN_CODE_LENGTHS = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
  30,
];
const EOS = 256;
const MAX_CODE_LENGTH = 30;

/** Canonical decoding tables: per length, the first code, and where its symbols start in SYMBOLS. */
const SYMBOLS: number[] = HUFFMAN_CODE_LENGTHS.map((_, sym) => sym).sort(
  (a, b) => (HUFFMAN_CODE_LENGTHS[a] ?? 0) - (HUFFMAN_CODE_LENGTHS[b] ?? 0) || a - b,
);
const FIRST_CODE = new Int32Array(MAX_CODE_LENGTH + 1);
const COUNT = new Int32Array(MAX_CODE_LENGTH + 1);
const OFFSET = new Int32Array(MAX_CODE_LENGTH + 1);
{
  for (const len of HUFFMAN_CODE_LENGTHS) COUNT[len]! += 1;
  let code = 0;
  let offset = 0;
  for (let len = 1; len <= MAX_CODE_LENGTH; len++) {
    FIRST_CODE[len] = code;
    OFFSET[len] = offset;
    code = (code + COUNT[len]!) << 1;
    offset += COUNT[len]!;
  }
}

/** The code of each symbol (exported so tests can build Huffman-coded input). */
export function huffmanCode(sym: number): { code: number; bits: number } {
  const bits = HUFFMAN_CODE_LENGTHS[sym];
  if (bits === undefined) throw new RangeError(`no Huffman code for symbol ${sym}`);
  const rank = SYMBOLS.indexOf(sym) - OFFSET[bits]!;
  return { code: FIRST_CODE[bits]! + rank, bits };
}

export function huffmanDecode(data: Buffer): Buffer {
  // The shortest code has 5 bits.
  const out = Buffer.allocUnsafe(Math.floor((data.length * 8) / 5));
  let n = 0;
  let code = 0;
  let bits = 0;
  for (const byte of data) {
    for (let mask = 0x80; mask !== 0; mask >>= 1) {
      code = (code << 1) | (byte & mask ? 1 : 0);
      bits++;
      // Canonical code: a prefix below FIRST_CODE[bits] would already have matched a shorter code.
      const rank = code - FIRST_CODE[bits]!;
      if (rank < COUNT[bits]!) {
        const sym = SYMBOLS[OFFSET[bits]! + rank]!;
        if (sym === EOS) throw new HpackError('Huffman string contains EOS');
        out[n++] = sym;
        code = 0;
        bits = 0;
      }
    }
  }
  // What is left must be padding: fewer than 8 bits, all ones (a prefix of EOS).
  if (bits > 7 || code !== (1 << bits) - 1) throw new HpackError('bad Huffman padding');
  return out.subarray(0, n);
}

/** RFC 7540 6.5.2: the size of a header list counts 32 octets of overhead per field. */
const FIELD_OVERHEAD = 32;
const fieldSize = (f: { name: Buffer; value: Buffer }) => f.name.length + f.value.length + FIELD_OVERHEAD;

/** Decodes header blocks of one direction of one connection, keeping its dynamic table. */
export class HpackDecoder {
  /** Newest first. */
  readonly #table: { name: Buffer; value: Buffer }[] = [];
  #tableSize = 0;
  #capacity: number;
  #limit: number;

  /**
   * @param limit the most the encoder may use: the receiver's SETTINGS_HEADER_TABLE_SIZE (4096
   *   until it says otherwise); also the table's initial size.
   * @param maxListSize decoded header lists larger than this (RFC 7540 accounting) are an error,
   *   so small blocks that reference big table entries many times cannot make us allocate much.
   */
  constructor(
    limit = 4096,
    readonly maxListSize = 1 << 20,
  ) {
    this.#limit = limit;
    this.#capacity = limit;
  }

  /** Raises the bound size updates are checked against (a new SETTINGS_HEADER_TABLE_SIZE). */
  raiseLimit(limit: number): void {
    this.#limit = Math.max(this.#limit, limit);
  }

  get tableEntries(): number {
    return this.#table.length;
  }

  decode(block: Buffer): HeaderField[] {
    const fields: HeaderField[] = [];
    let listSize = 0;
    let pos = 0;
    const int = (prefixBits: number): number => {
      if (pos >= block.length) throw new HpackError('truncated integer');
      const max = (1 << prefixBits) - 1;
      let value = block[pos++]! & max;
      if (value < max) return value;
      for (let shift = 0; ; shift += 7) {
        if (pos >= block.length) throw new HpackError('truncated integer');
        if (shift > 21) throw new HpackError('integer too large');
        const b = block[pos++]!;
        value += (b & 0x7f) * 2 ** shift;
        if ((b & 0x80) === 0) return value;
      }
    };
    const str = (): Buffer => {
      if (pos >= block.length) throw new HpackError('truncated string');
      const huffman = (block[pos]! & 0x80) !== 0;
      const len = int(7);
      if (len > block.length - pos) throw new HpackError(`string of ${len} bytes overruns the block`);
      const raw = block.subarray(pos, pos + len);
      pos += len;
      return huffman ? huffmanDecode(raw) : raw;
    };
    const entry = (index: number): { name: Buffer; value: Buffer } => {
      if (index === 0) throw new HpackError('index 0');
      const found =
        index <= STATIC_FIELDS.length
          ? STATIC_FIELDS[index - 1]
          : this.#table[index - STATIC_FIELDS.length - 1];
      if (!found) {
        throw new HpackError(
          `index ${index} is outside the tables (${STATIC_FIELDS.length} static + ${this.#table.length} dynamic entries)`,
        );
      }
      return found;
    };

    while (pos < block.length) {
      const first = block[pos]!;
      if ((first & 0xe0) === 0x20) {
        // Dynamic table size update: only before the block's first field (RFC 7541 4.2).
        if (fields.length > 0) throw new HpackError('dynamic table size update after a header field');
        const size = int(5);
        if (size > this.#limit) {
          throw new HpackError(`dynamic table size update to ${size} exceeds the limit ${this.#limit}`);
        }
        this.#capacity = size;
        this.#evict(0);
        continue;
      }
      let field: HeaderField;
      if (first & 0x80) {
        const { name, value } = entry(int(7));
        field = { name, value, neverIndex: false };
      } else {
        const indexing = (first & 0x40) !== 0;
        const index = int(indexing ? 6 : 4);
        const name = index === 0 ? str() : entry(index).name;
        field = { name, value: str(), neverIndex: !indexing && (first & 0x10) !== 0 };
        if (indexing) this.#insert(field.name, field.value);
      }
      listSize += fieldSize(field);
      if (listSize > this.maxListSize) {
        throw new HpackError(`header list larger than ${this.maxListSize} bytes`);
      }
      fields.push(field);
    }
    return fields;
  }

  #insert(name: Buffer, value: Buffer): void {
    // Copies: the entries outlive the block they arrived in.
    const e = { name: Buffer.from(name), value: Buffer.from(value) };
    const size = fieldSize(e);
    this.#evict(size);
    // An entry larger than the whole table empties it and is not added (RFC 7541 4.4).
    if (size > this.#capacity) return;
    this.#table.unshift(e);
    this.#tableSize += size;
  }

  /** Evicts the oldest entries until `room` more bytes fit. */
  #evict(room: number): void {
    while (this.#table.length > 0 && this.#tableSize + room > this.#capacity) {
      this.#tableSize -= fieldSize(this.#table.pop()!);
    }
  }
}

function writeInt(out: Buffer, pos: number, prefix: number, prefixBits: number, value: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[pos++] = prefix | value;
    return pos;
  }
  out[pos++] = prefix | max;
  let rest = value - max;
  while (rest >= 0x80) {
    out[pos++] = (rest & 0x7f) | 0x80;
    rest = Math.floor(rest / 0x80);
  }
  out[pos++] = rest;
  return pos;
}

/**
 * Encodes fields as literals without indexing (never-indexed ones stay never indexed), with the
 * name by static-table index where it has one, and plain (not Huffman) strings.
 */
export function encodeLiterals(fields: readonly HeaderField[]): Buffer {
  // Integers below 2^28 need at most 5 bytes; each field has up to three of them.
  let max = 0;
  for (const f of fields) max += f.name.length + f.value.length + 15;
  const out = Buffer.allocUnsafe(max);
  let pos = 0;
  for (const f of fields) {
    const prefix = f.neverIndex ? 0x10 : 0x00;
    const index = STATIC_NAME_INDEX.get(f.name.toString('latin1')) ?? 0;
    pos = writeInt(out, pos, prefix, 4, index);
    if (index === 0) {
      pos = writeInt(out, pos, 0, 7, f.name.length);
      pos += f.name.copy(out, pos);
    }
    pos = writeInt(out, pos, 0, 7, f.value.length);
    pos += f.value.copy(out, pos);
  }
  return out.subarray(0, pos);
}
