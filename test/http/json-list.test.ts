import { describe, expect, it } from 'vitest';
import { JsonListReader } from '../../src/infra/http/json-list.js';

/** Reads `text` in the given pieces; each item is kept as `{ kept: item, at: index }`. */
function readInPieces(pieces: string[]): unknown {
  const reader = new JsonListReader((item, index) => ({ kept: item, at: index }));
  for (const piece of pieces) reader.write(piece);
  return reader.end();
}

/** What JSON.parse makes of the same text, with the items kept the same way. */
function expected(text: string): unknown {
  const value = JSON.parse(text) as unknown;
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  const list = value as Record<string, unknown>;
  if (!Array.isArray(list.items)) return list;
  return { ...list, items: list.items.map((item: unknown, at) => ({ kept: item, at })) };
}

/** Every way of cutting `text` in two, and some in many small pieces. */
function cuts(text: string): string[][] {
  const out: string[][] = [[text]];
  for (let i = 0; i <= text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  for (const size of [1, 2, 3, 7]) {
    const pieces: string[] = [];
    for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
    out.push(pieces);
  }
  return out;
}

const ARGO_LIKE =
  '{"metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a"},"status":{"resources":[{"k":1},' +
  '{"metadata":{"x":"y"}}],"m":"},{\\"metadata\\":{"}},{"metadata":{"name":"b"},"spec":{"s":"},{"}},' +
  '{"metadata":{"name":"c"}}]}';

const VALID = [
  '{"metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}',
  '{"items":[],"metadata":{}}',
  '{"metadata":{},"items":null}',
  '{"metadata":{}}',
  '{}',
  ' \n\t{ "items" : [ null , {"a":[1,2,{"b":"]}{["}]} , "x" , 12.5e-3 , true , false , -0 ] , "after" : [ "y" ] } \n',
  '{"items":[{"s":"quote \\" and backslash \\\\","u":"\\u00e9 ü ☃ 🎉","esc":"\\\\\\""}]}',
  '{"items":[{"s":"an escaped quote \\" then } ] { inside","t":"\\\\"},{"after":"\\\\\\"}"}]}',
  '{"items":[{"deep":[[[[{"x":[]}]]]],"empty":{}}],"metadata":{"continue":""}}',
  '\ufeff{"items":[1]}',
  // Items that start alike, as Argo CD writes them: found by where the next starts, unless what looks like it is
  // inside the item (a nested object that starts with the same key) or a string holding the same text escaped.
  ARGO_LIKE,
  '{"items":[{"metadata":{"a":1}} ,{"metadata":{"b":2}},\n{"metadata":{}},{"metadata" :{}},{"metadat":{}}]}',
  '{"items":[{"metadata":1},{"metadata":[{"x":1},{"metadata":2}]},"x",{"metadata":3},{"spec":4},{"metadata":5}]}',
  `{"items":[${Array.from({ length: 20 }, (_, i) => `{"metadata":{"n":${i}},"s":[{"metadata":{}},{"metadata":[]}]}`).join(',')}]}`,
  '[1,2,3]',
  'null',
  '"a list?"',
  '42',
];

describe('JsonListReader', () => {
  it.each(VALID)('reads %j as JSON.parse does, however the text is cut into pieces', (text) => {
    const want = expected(text.replace(/^\ufeff/, ''));
    for (const pieces of cuts(text)) expect(readInPieces(pieces), JSON.stringify(pieces)).toEqual(want);
  });

  it('hands each item on as soon as it has arrived, before the rest of the body', () => {
    const seen: string[] = [];
    const reader = new JsonListReader((item) => {
      seen.push((item as { metadata: { name: string } }).metadata.name);
      return 'kept';
    });
    reader.write('{"metadata":{},"items":[{"metadata":{"name":"a"}},{"metadata":{"na');
    expect(seen).toEqual(['a']);
    reader.write('me":"b"}}');
    expect(seen).toEqual(['a', 'b']);
    reader.write(']}');
    expect(reader.end()).toEqual({ metadata: {}, items: ['kept', 'kept'] });
  });

  it('tells each of the list’s other fields as soon as it is whole, before the items that follow it', () => {
    const told: string[] = [];
    const reader = new JsonListReader(
      (item) => {
        told.push(`item ${JSON.stringify(item)}`);
        return item;
      },
      (key, value) => told.push(`${key} ${JSON.stringify(value)}`),
    );
    reader.write('{"metadata":{"resourceVersion":"4');
    expect(told).toEqual([]);
    reader.write('2"},"items":[{"a":1},');
    expect(told).toEqual(['metadata {"resourceVersion":"42"}', 'item {"a":1}']);
    reader.write('{"a":2}],"after":true}');
    expect(told.slice(2)).toEqual(['item {"a":2}', 'after true']);
    expect(reader.end()).toEqual({ metadata: { resourceVersion: '42' }, items: [{ a: 1 }, { a: 2 }], after: true });
  });

  const BROKEN = [
    ['cut short in an item', '{"items":[{"metadata":'],
    ['cut short after an item', '{"items":[{"a":1}'],
    ['cut short in a string', '{"items":[{"a":"b'],
    ['cut short after the items', '{"items":[]'],
    ['empty', ''],
    ['only whitespace', '  \n'],
    ['a trailing comma among the items', '{"items":[1,]}'],
    ['a comma before the first item', '{"items":[,1]}'],
    ['two items without a comma', '{"items":[{"a":1}{"a":2}]}'],
    ['a trailing comma among the keys', '{"a":1,}'],
    ['a key without a colon', '{"a" 1}'],
    ['a key that is not a string', '{a:1}'],
    ['a bad literal', '{"items":[tru]}'],
    ['a bad number', '{"items":[1.2.3]}'],
    ['a bad escape', '{"items":["\\x"]}'],
    ['garbage after the list', '{"items":[]} x'],
    ['a second list after the list', '{"items":[]}{"items":[]}'],
    ['items closed by a brace', '{"items":[1}'],
    ['an unterminated object inside an item', '{"items":[{"a":{"b":1}]}'],
    ['two items lists', '{"items":[1],"items":[2]}'],
    ['HTML', '<html>Sign in</html>'],
  ];

  it.each(BROKEN)('fails a body %s, as JSON.parse does, in one piece or in many', (_what, text) => {
    for (const pieces of cuts(text)) expect(() => readInPieces(pieces), JSON.stringify(pieces)).toThrow(SyntaxError);
  });

  // How many of the thousand the damage breaks depends on the list: one of mostly strings stays valid more often.
  it.each([
    ['mixed values', 5, 500],
    ['Argo CD-like items', 0, 400],
  ])('fails exactly where JSON.parse fails, for a thousand damaged lists of %s', (_what, which, broken) => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const base = which === 0 ? ARGO_LIKE : VALID[which];
    const alphabet = '{}[],:" \\0a1-.e';
    let rejected = 0;
    for (let round = 0; round < 1000; round++) {
      const at = random(base.length);
      const damage = random(3);
      const damaged =
        damage === 0
          ? base.slice(0, at) + base.slice(at + 1)
          : damage === 1
            ? base.slice(0, at) + alphabet[random(alphabet.length)] + base.slice(at)
            : base.slice(0, at) + alphabet[random(alphabet.length)] + base.slice(at + 1);
      // JSON.parse keeps the last of two "items"; a list with two is refused here, on purpose.
      if (damaged.split('"items"').length > 2) continue;
      let want: unknown;
      let parses = true;
      try {
        want = expected(damaged);
      } catch {
        parses = false;
      }
      const pieces = [damaged.slice(0, random(damaged.length + 1)), ''];
      pieces[1] = damaged.slice(pieces[0].length);
      if (parses) expect(readInPieces(pieces), damaged).toEqual(want);
      else {
        rejected++;
        expect(() => readInPieces(pieces), damaged).toThrow(SyntaxError);
      }
    }
    // The damage must actually break most lists, or this compares nothing.
    expect(rejected).toBeGreaterThan(broken);
  });

  it('keeps the start of the body, to quote in an error', () => {
    const reader = new JsonListReader((item) => item);
    reader.write('<html>');
    reader.write('Sign in');
    expect(() => reader.end()).toThrow(SyntaxError);
    expect(reader.head).toBe('<html>Sign in');
  });
});
