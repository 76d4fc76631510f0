import type { KObject } from '../meta/object.js';

/**
 * Encodes the Swagger 2.0 document as the gnostic `openapi.v2.Document` protobuf, the only form
 * kubectl up to 1.29 accepts from /openapi/v2. Only the fields this server emits are encoded;
 * field numbers follow gnostic's OpenAPIv2.proto.
 */
class Writer {
  private readonly parts: Buffer[] = [];
  private length = 0;

  private push(b: Buffer) {
    this.parts.push(b);
    this.length += b.length;
  }

  private varint(n: number) {
    const bytes: number[] = [];
    let v = n;
    while (v > 0x7f) {
      bytes.push((v & 0x7f) | 0x80);
      v = Math.floor(v / 128);
    }
    bytes.push(v);
    this.push(Buffer.from(bytes));
  }

  string(field: number, s: string | undefined) {
    if (s === undefined || s === '') return;
    this.bytes(field, Buffer.from(s, 'utf8'));
  }

  strings(field: number, list: string[] | undefined) {
    for (const s of list ?? []) this.bytes(field, Buffer.from(s, 'utf8'));
  }

  bool(field: number, b: boolean | undefined) {
    if (!b) return;
    this.varint(field << 3);
    this.varint(1);
  }

  bytes(field: number, b: Buffer) {
    this.varint((field << 3) | 2);
    this.varint(b.length);
    this.push(b);
  }

  message(field: number, fill: (w: Writer) => void) {
    const w = new Writer();
    fill(w);
    this.bytes(field, w.finish());
  }

  finish(): Buffer {
    return Buffer.concat(this.parts, this.length);
  }
}

/** NamedAny entries for the x-* keys of an object; the value travels as YAML (JSON is YAML). */
function vendorExtensions(w: Writer, field: number, o: KObject) {
  for (const [k, v] of Object.entries(o)) {
    if (!k.startsWith('x-')) continue;
    w.message(field, (n) => {
      n.string(1, k);
      n.message(2, (a) => a.string(2, `${JSON.stringify(v)}\n`));
    });
  }
}

function schema(w: Writer, s: KObject) {
  w.string(1, s.$ref);
  w.string(2, s.format);
  w.string(4, s.description);
  w.strings(19, s.required);
  if (s.additionalProperties !== undefined && typeof s.additionalProperties === 'object') {
    w.message(21, (a) => a.message(1, (x) => schema(x, s.additionalProperties)));
  }
  if (s.type !== undefined) w.message(22, (t) => t.strings(1, [s.type]));
  if (s.items !== undefined) w.message(23, (i) => i.message(1, (x) => schema(x, s.items)));
  for (const sub of s.allOf ?? []) w.message(24, (x) => schema(x, sub));
  if (s.properties !== undefined) {
    w.message(25, (p) => {
      for (const [name, prop] of Object.entries(s.properties as KObject)) {
        p.message(1, (n) => {
          n.string(1, name);
          n.message(2, (x) => schema(x, prop));
        });
      }
    });
  }
  vendorExtensions(w, 31, s);
}

function parameter(w: Writer, p: KObject) {
  w.message(1, (param) => {
    if (p.in === 'body') {
      param.message(1, (b) => {
        b.string(2, p.name);
        b.string(3, p.in);
        b.bool(4, p.required);
        b.message(5, (x) => schema(x, p.schema));
      });
    } else {
      param.message(2, (nb) =>
        nb.message(3, (q) => {
          q.bool(1, p.required);
          q.string(2, p.in);
          q.string(4, p.name);
          q.string(6, p.type);
          q.bool(20, p.uniqueItems);
        }),
      );
    }
  });
}

function operation(w: Writer, op: KObject) {
  w.string(5, op.operationId);
  w.strings(7, op.consumes);
  for (const p of op.parameters ?? []) w.message(8, (x) => parameter(x, p));
  w.message(9, (rs) => {
    for (const [code, r] of Object.entries((op.responses ?? {}) as KObject)) {
      rs.message(1, (n) => {
        n.string(1, code);
        n.message(2, (rv) =>
          rv.message(1, (resp) => {
            resp.string(1, r.description);
            if (r.schema) resp.message(2, (si) => si.message(1, (x) => schema(x, r.schema)));
          }),
        );
      });
    }
  });
  vendorExtensions(w, 13, op);
}

const OPERATION_FIELDS: Record<string, number> = { get: 2, put: 3, post: 4, delete: 5, patch: 8 };

export function encodeOpenApiV2(doc: KObject): Buffer {
  const w = new Writer();
  w.string(1, doc.swagger);
  w.message(2, (i) => {
    i.string(1, doc.info?.title);
    i.string(2, doc.info?.version);
  });
  w.message(8, (paths) => {
    for (const [path, item] of Object.entries((doc.paths ?? {}) as KObject)) {
      paths.message(2, (np) => {
        np.string(1, path);
        np.message(2, (pi) => {
          for (const [verb, field] of Object.entries(OPERATION_FIELDS)) {
            if (item[verb]) pi.message(field, (o) => operation(o, item[verb]));
          }
        });
      });
    }
  });
  w.message(9, (defs) => {
    for (const [name, s] of Object.entries((doc.definitions ?? {}) as KObject)) {
      defs.message(1, (n) => {
        n.string(1, name);
        n.message(2, (x) => schema(x, s));
      });
    }
  });
  return w.finish();
}
