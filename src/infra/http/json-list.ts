/**
 * A JSON list answer (`{"metadata": {...}, "items": [...]}`) read as it arrives: each element of the top-level
 * `items` is parsed on its own and handed to `eachItem` as soon as its last byte is in, and the list keeps only
 * what `eachItem` returns. An application list of 10,000 apps with their histories is about 80 MB of JSON and
 * several times that once parsed whole; read this way, only the kept form of each app and one chunk of text are
 * alive at a time, and the parsing runs while the rest of the body is still on the wire.
 *
 * It is as strict as `JSON.parse` of the whole body: each value is parsed by `JSON.parse`, and the structure
 * around them (braces, brackets, colons, commas, keys) is checked here; a body cut short fails at `end()`.
 * A body that is valid JSON but not an object is parsed whole and returned as it is, for the caller's shape check.
 */
export class JsonListReader {
  /** The body's first characters, for an error that quotes what the upstream sent. */
  head = '';
  private buf = '';
  private pos = 0;
  private state: State = 'start';
  private key = '';
  private readonly envelope: Record<string, unknown> = {};
  private readonly items: unknown[] = [];
  private sawItems = false;
  /** The value being scanned: where it starts in `buf`, and how far the scan got. */
  private valueStart = -1;
  private scan: ValueScan = { at: 0, depth: 0, scalar: false };
  private whole: string[] | undefined;
  /** Between an item and the next (`},{"metadata":`), once the first item told its first key (`itemByNext`). */
  private next: string | undefined;
  private misses = 0;

  /**
   * `eachField` is told each of the list's other top-level fields as soon as it is whole: a list's `metadata`
   * usually comes before its items, and its resourceVersion is known long before the last item is in.
   */
  constructor(
    private readonly eachItem: (item: unknown, index: number) => unknown,
    private readonly eachField?: (key: string, value: unknown) => void,
  ) {}

  write(text: string): void {
    if (this.head.length < HEAD_CHARS) this.head += text.slice(0, HEAD_CHARS - this.head.length);
    if (this.whole) {
      this.whole.push(text);
      return;
    }
    const keepFrom = this.valueStart >= 0 ? this.valueStart : this.pos;
    if (keepFrom >= this.buf.length) {
      this.buf = text;
    } else {
      this.buf = this.buf.slice(keepFrom) + text;
    }
    this.shift(keepFrom);
    this.run(false);
  }

  /** The whole answer: the list's other fields, and `items` as `eachItem` returned them. */
  end(): unknown {
    if (this.whole) return JSON.parse(stripBom(this.whole.join('')));
    this.run(true);
    if (this.state !== 'done') throw new SyntaxError(`the JSON ends early (${DESCRIBE[this.state]})`);
    return this.envelope;
  }

  /** JSON.parse would keep the last of two `items`; items already handed on cannot be taken back, so it fails. */
  private claimItems(): void {
    if (this.sawItems) throw new SyntaxError('the list has two "items"');
    this.sawItems = true;
  }

  /** Moves every offset into `buf` back by `by`, after the text before them was let go. */
  private shift(by: number): void {
    this.pos -= by;
    if (this.valueStart >= 0) {
      this.valueStart -= by;
      this.scan.at -= by;
    }
  }

  private run(atEnd: boolean): void {
    while (this.step(atEnd));
  }

  /** One step of the list's structure; false when it needs more text. */
  private step(atEnd: boolean): boolean {
    if (this.state === 'in-value' || this.state === 'in-item' || this.state === 'in-key') return this.value(atEnd);
    const c = this.nextChar();
    if (c === undefined) return false;
    switch (this.state) {
      case 'start':
        if (c === '{') return this.to('first-key');
        this.whole = [this.buf.slice(this.pos - 1)];
        this.buf = '';
        return false;
      case 'first-key':
        if (c === '}') return this.to('done');
        return this.startValue(c, '"', 'in-key');
      case 'key':
        return this.startValue(c, '"', 'in-key');
      case 'colon':
        return c === ':' ? this.to('value') : this.unexpected(c);
      case 'value':
        if (this.key === 'items' && c === '[') {
          this.claimItems();
          this.envelope.items = this.items;
          return this.to('first-item');
        }
        return this.startValue(c, undefined, 'in-value');
      case 'after-value':
        if (c === ',') return this.to('key');
        return c === '}' ? this.to('done') : this.unexpected(c);
      case 'first-item':
        if (c === ']') return this.to('after-value');
        return this.startValue(c, undefined, 'in-item');
      case 'item':
        return this.startValue(c, undefined, 'in-item');
      case 'after-item':
        if (c === ',') return this.to('item');
        return c === ']' ? this.to('after-value') : this.unexpected(c);
      case 'done':
        return this.unexpected(c);
    }
  }

  /** The next character that is not whitespace, consumed; undefined when the text so far has none. */
  private nextChar(): string | undefined {
    const buf = this.buf;
    let i = this.pos;
    if (this.state === 'start' && i === 0 && buf.charCodeAt(0) === 0xfeff) i = 1;
    while (i < buf.length && isSpace(buf.charCodeAt(i))) i++;
    this.pos = i;
    if (i >= buf.length) return undefined;
    this.pos = i + 1;
    return buf[i];
  }

  private to(state: State): true {
    this.state = state;
    return true;
  }

  private unexpected(c: string): never {
    throw new SyntaxError(`unexpected ${JSON.stringify(c)} ${DESCRIBE[this.state]}`);
  }

  /** Starts scanning a value whose first character `c` was just consumed. */
  private startValue(c: string, must: string | undefined, state: State): true {
    if (must !== undefined && c !== must) this.unexpected(c);
    if (c === ']' || c === '}' || c === ',' || c === ':') this.unexpected(c);
    this.valueStart = this.pos - 1;
    this.scan = { at: this.pos - 1, depth: 0, scalar: false };
    return this.to(state);
  }

  /**
   * An item found by where the next one starts, without scanning each of its characters: an Application is mostly
   * keys and short strings, and scanning them cost most of what JSON.parse does. Argo CD writes a list compactly and
   * every item starts with the same key, so `},{"metadata":` follows each item but the last. A string cannot hold
   * that text (its quote would end the string) but a nested object can, so JSON.parse decides: a slice from the
   * item's `{` that parses whole ends where the item does, where scanning would have ended it. Searched from where
   * the scan got (the item ends there or later); otherwise, or when the slice is not the item, the item is scanned.
   */
  private itemByNext(): { end: number; parsed: unknown } | undefined {
    const at = this.buf.indexOf(this.next!, this.scan.at);
    if (at < 0 || this.buf.charCodeAt(this.valueStart) !== OPEN_BRACE) return undefined;
    try {
      return { end: at + 1, parsed: JSON.parse(this.buf.slice(this.valueStart, at + 1)) as unknown };
    } catch {
      // Places that are not an item's end cost a parse each: past a few, every item is scanned.
      if (++this.misses > MAX_MISSES) this.next = undefined;
      return undefined;
    }
  }

  /** Scans on through the current value; when it is whole, parses it and puts it where it belongs. */
  private value(atEnd: boolean): boolean {
    const item = this.state === 'in-item' && this.next ? this.itemByNext() : undefined;
    let end: number;
    let parsed: unknown;
    if (item) ({ end, parsed } = item);
    else {
      end = scanValue(this.buf, this.scan, atEnd);
      if (end < 0) return false;
      parsed = JSON.parse(this.buf.slice(this.valueStart, end)) as unknown;
      if (this.state === 'in-item' && this.items.length === 0) this.next = nextItemText(this.buf, this.valueStart);
    }
    const state = this.state;
    this.valueStart = -1;
    this.pos = end;
    if (state === 'in-key') {
      this.key = parsed as string;
      return this.to('colon');
    }
    if (state === 'in-value') {
      if (this.key === 'items') this.claimItems();
      this.envelope[this.key] = parsed;
      this.eachField?.(this.key, parsed);
      return this.to('after-value');
    }
    this.items.push(this.eachItem(parsed, this.items.length));
    return this.to('after-item');
  }
}

/** Places where the next item seemed to start that were not the current item's end, before items are only scanned. */
const MAX_MISSES = 16;

type State =
  | 'start'
  | 'first-key'
  | 'key'
  | 'in-key'
  | 'colon'
  | 'value'
  | 'in-value'
  | 'after-value'
  | 'first-item'
  | 'item'
  | 'in-item'
  | 'after-item'
  | 'done';

const DESCRIBE: Record<State, string> = {
  start: 'before the list',
  'first-key': 'where a key or } belongs',
  key: 'where a key belongs',
  'in-key': 'inside a key',
  colon: 'where : belongs',
  value: 'where a value belongs',
  'in-value': 'inside a value',
  'after-value': 'where , or } belongs',
  'first-item': 'where an item or ] belongs',
  item: 'where an item belongs',
  'in-item': 'inside an item',
  'after-item': 'where , or ] belongs',
  done: 'after the list',
};

const HEAD_CHARS = 1024;

interface ValueScan {
  /** The next character to look at. */
  at: number;
  /** Open braces and brackets. */
  depth: number;
  /** A number, true, false or null: it ends at the first character that cannot be part of it. */
  scalar: boolean;
}

/**
 * Where the value that starts at `scan.at` ends (the index after it), or -1 when the text so far does not hold all
 * of it; `scan` keeps how far it got, so the next call goes on from there. Strings are skipped whole with indexOf:
 * most of an Application's bytes are in them.
 */
function scanValue(buf: string, scan: ValueScan, atEnd: boolean): number {
  let i = scan.at;
  if (scan.depth === 0 && !scan.scalar && i < buf.length) {
    const first = buf.charCodeAt(i);
    if (first !== OPEN_BRACE && first !== OPEN_BRACKET && first !== QUOTE) scan.scalar = true;
  }
  if (scan.scalar) {
    while (i < buf.length && !endsScalar(buf.charCodeAt(i))) i++;
    scan.at = i;
    return i < buf.length || atEnd ? i : -1;
  }
  while (i < buf.length) {
    const c = buf.charCodeAt(i);
    if (c === QUOTE) {
      const close = closingQuote(buf, i + 1);
      if (close < 0) break;
      i = close + 1;
      if (scan.depth === 0) {
        scan.at = i;
        return i;
      }
      continue;
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) scan.depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      scan.depth--;
      if (scan.depth === 0) {
        scan.at = i + 1;
        return i + 1;
      }
    }
    i++;
  }
  scan.at = i;
  return -1;
}

/** The index of the quote that closes a string whose text starts at `from`, or -1 when it is not in yet. */
function closingQuote(buf: string, from: number): number {
  let q = buf.indexOf('"', from);
  while (q >= 0) {
    let backslashes = 0;
    while (buf.charCodeAt(q - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return q;
    q = buf.indexOf('"', q + 1);
  }
  return -1;
}

/**
 * What separates an item from the next when both start with the first key of the one at `start` (`},{"metadata":`),
 * or undefined when that item is not an object written compactly.
 */
function nextItemText(buf: string, start: number): string | undefined {
  if (buf.charCodeAt(start) !== OPEN_BRACE || buf.charCodeAt(start + 1) !== QUOTE) return undefined;
  const close = closingQuote(buf, start + 2);
  if (close < 0 || buf.charCodeAt(close + 1) !== COLON) return undefined;
  return `},${buf.slice(start, close + 2)}`;
}

const QUOTE = 0x22;
const COLON = 0x3a;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function endsScalar(c: number): boolean {
  return c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || isSpace(c);
}

/** A UTF-8 byte order mark is not part of the JSON (as axios' own text mode drops it). */
export function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
