// Building the page's elements. Data from the results only ever becomes text nodes or attribute
// values, never HTML, so log lines and probe bodies cannot inject markup.

export type Child = Node | string | number | null | undefined | false;

type Attrs = Record<string, string | number | boolean | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element: the charts and the timeline's latency bars. */
export function s(tag: string, attrs: Attrs = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG_NS, tag) as SVGElement;
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el: Element, attrs: Attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? '' : String(value));
  }
}

function append(el: Element, children: Child[]) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
}

/** An element of the page shell (html.ts); a missing one is a bug in the shell, so it throws. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`report page is missing #${id}`);
  return el as T;
}

/** A table's header row: one column heading per text. */
export function headRow(...headings: string[]): HTMLTableSectionElement {
  return h('thead', {}, h('tr', {}, ...headings.map((t) => h('th', { scope: 'col' }, t))));
}

/** Read by screen readers, not shown. */
export function hiddenText(text: string): HTMLElement {
  return h('span', { class: 'visually-hidden' }, text);
}
