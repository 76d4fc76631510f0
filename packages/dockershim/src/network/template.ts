// The CNI config template of containerd's CRI plugin (`[plugins."io.containerd.grpc.v1.cri".cni]
// conf_template`), for --cni-conf-template: a Go text/template filled with the node's pod CIDRs
// when UpdateRuntimeConfig brings them. The subset containerd's documented templates use is
// implemented: `{{.PodCIDR}}`, `{{.PodCIDRRanges}}`, `{{.Routes}}`, `{{range}}` (with `$i, $v :=`
// or `.`), `{{if}}`/`{{else}}`, `{{end}}`, `{{- -}}` trimming and comments. Anything else is an
// error naming it, found when the template is parsed (at start-up).

export interface TemplateData {
  /** The first pod CIDR. */
  PodCIDR: string;
  /** Every pod CIDR (one per IP family on a dual-stack node). */
  PodCIDRRanges: string[];
  /** The default route of each family present: 0.0.0.0/0, ::/0. */
  Routes: string[];
}

type Value = string | string[] | number | TemplateData;

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'print'; expr: string }
  | { kind: 'range'; expr: string; index?: string; elem?: string; body: Node[]; otherwise: Node[] }
  | { kind: 'if'; expr: string; body: Node[]; otherwise: Node[] };

/** The data containerd gives its template for a list of pod CIDRs (its getRoutes included). */
export function templateData(cidrs: readonly string[]): TemplateData {
  const routes: string[] = [];
  for (const c of cidrs) {
    const route = c.includes(':') ? '::/0' : '0.0.0.0/0';
    if (!routes.includes(route)) routes.push(route);
  }
  return { PodCIDR: cidrs[0] ?? '', PodCIDRRanges: [...cidrs], Routes: routes };
}

export class ConfTemplate {
  private constructor(private readonly nodes: Node[]) {}

  static parse(text: string): ConfTemplate {
    const tokens = tokenize(text);
    let pos = 0;
    const block = (closers: readonly string[]): { nodes: Node[]; closer: string } => {
      const nodes: Node[] = [];
      while (pos < tokens.length) {
        const t = tokens[pos++]!;
        if (t.kind === 'text') {
          nodes.push(t);
          continue;
        }
        const action = t.action;
        if (closers.includes(action)) return { nodes, closer: action };
        const [word = '', ...rest] = action.split(/\s+/);
        const arg = rest.join(' ');
        if (word === 'range' || word === 'if') {
          const body = block(['end', 'else']);
          const otherwise = body.closer === 'else' ? block(['end']).nodes : [];
          if (word === 'if') nodes.push({ kind: 'if', expr: arg, body: body.nodes, otherwise });
          else nodes.push({ kind: 'range', ...rangeHead(arg), body: body.nodes, otherwise });
        } else if (word === 'end' || word === 'else') {
          throw new Error(`template: unexpected {{${word}}}`);
        } else {
          checkExpr(action);
          nodes.push({ kind: 'print', expr: action });
        }
      }
      if (closers.length > 0) throw new Error('template: missing {{end}}');
      return { nodes, closer: '' };
    };
    return new ConfTemplate(block([]).nodes);
  }

  execute(data: TemplateData): string {
    return run(this.nodes, { dot: data, vars: new Map() });
  }
}

type Token = { kind: 'text'; text: string } | { kind: 'action'; action: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const open = text.indexOf('{{', i);
    if (open < 0) {
      tokens.push({ kind: 'text', text: text.slice(i) });
      break;
    }
    const close = text.indexOf('}}', open + 2);
    if (close < 0) throw new Error('template: unclosed action {{');
    let before = text.slice(i, open);
    let inner = text.slice(open + 2, close);
    // "{{- " trims the space before the action, " -}}" the space after it.
    if (/^-\s/.test(inner)) {
      before = before.trimEnd();
      inner = inner.slice(1);
    }
    let next = close + 2;
    if (/\s-$/.test(inner)) {
      inner = inner.slice(0, -1);
      const rest = text.slice(next);
      next += rest.length - rest.trimStart().length;
    }
    if (before) tokens.push({ kind: 'text', text: before });
    const action = inner.trim();
    if (!(action.startsWith('/*') && action.endsWith('*/'))) tokens.push({ kind: 'action', action });
    i = next;
  }
  return tokens;
}

const VAR = /^\$[A-Za-z_][A-Za-z0-9_]*$/;
const FIELD = /^\.[A-Za-z_][A-Za-z0-9_]*$/;

function checkExpr(expr: string): void {
  if (expr === '.' || VAR.test(expr) || FIELD.test(expr)) return;
  throw new Error(`template: unsupported action {{${expr}}} (supported: .Field, $var, range, if, else, end)`);
}

function rangeHead(arg: string): { expr: string; index?: string; elem?: string } {
  const m = /^(\$\w+)\s*(?:,\s*(\$\w+)\s*)?:=\s*(.+)$/.exec(arg);
  if (!m) {
    checkExpr(arg);
    return { expr: arg };
  }
  const expr = m[3]!.trim();
  checkExpr(expr);
  // "range $v := x" binds the element; "range $i, $v := x" the index and the element.
  return m[2] ? { expr, index: m[1]!, elem: m[2] } : { expr, elem: m[1]! };
}

interface Scope {
  dot: Value;
  vars: Map<string, Value>;
}

function evaluate(expr: string, scope: Scope): Value {
  if (expr === '.') return scope.dot;
  if (expr.startsWith('$')) {
    const v = scope.vars.get(expr);
    if (v === undefined) throw new Error(`template: undefined variable: ${expr}`);
    return v;
  }
  const field = expr.slice(1);
  const dot = scope.dot;
  if (typeof dot !== 'object' || Array.isArray(dot) || !Object.hasOwn(dot, field))
    throw new Error(`template: can't evaluate field ${field}`);
  return dot[field as keyof TemplateData];
}

/** Go's truth: empty strings and lists, and zero, are false. */
function truthy(v: Value): boolean {
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string' || Array.isArray(v)) return v.length > 0;
  return true;
}

/** Go's fmt of a value: a list prints as [a b]. */
function show(v: Value): string {
  if (Array.isArray(v)) return `[${v.join(' ')}]`;
  if (typeof v === 'object') throw new Error('template: cannot print the whole data');
  return String(v);
}

function run(nodes: readonly Node[], scope: Scope): string {
  let out = '';
  for (const n of nodes) {
    switch (n.kind) {
      case 'text':
        out += n.text;
        break;
      case 'print':
        out += show(evaluate(n.expr, scope));
        break;
      case 'if':
        out += run(truthy(evaluate(n.expr, scope)) ? n.body : n.otherwise, scope);
        break;
      case 'range': {
        const list = evaluate(n.expr, scope);
        if (!Array.isArray(list)) throw new Error(`template: range can't iterate over ${n.expr}`);
        if (list.length === 0) out += run(n.otherwise, scope);
        list.forEach((elem, i) => {
          const vars = new Map(scope.vars);
          if (n.index) vars.set(n.index, i);
          if (n.elem) vars.set(n.elem, elem);
          out += run(n.body, { dot: elem, vars });
        });
        break;
      }
    }
  }
  return out;
}
