// Building the DOM from data. Every value from the store (task ids, rooms, file names, bodies) is
// attacker-controlled: it only ever becomes a text node or an attribute value, never markup, and control
// and bidirectional-override characters are shown as escapes so that an id cannot hide or reorder text.
type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined>;

const SVG_NS = 'http://www.w3.org/2000/svg';

// C0 and C1 controls, DEL, and the bidirectional marks, embeddings, overrides and isolates.
const HIDDEN_CHARS = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** The text as it should be read: invisible characters spelled out as \uXXXX. */
function visible(text: string): string {
  return text.replace(HIDDEN_CHARS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? '' : String(value));
  }
}

function append(el: Element, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'string' || typeof child === 'number' ? visible(String(child)) : child);
  }
}

/** An HTML element with attributes and children (strings become text nodes). */
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

/** An SVG element. */
export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/** Raw text, control characters kept (a callback's JSON in a <pre>: JSON.stringify already escapes them). */
export function rawText(text: string): Text {
  return document.createTextNode(text);
}

/** A link only for http and https URLs; anything else (javascript:, data:, relative) stays text. */
export function externalLink(url: string): HTMLElement {
  let parsed: URL | null = null;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  if (parsed && (parsed.protocol === 'http:' || parsed.protocol === 'https:')) {
    return h('a', { href: parsed.href, rel: 'noopener noreferrer', target: '_blank' }, url);
  }
  return h('span', { class: 'mono' }, url);
}
