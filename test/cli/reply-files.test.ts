import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Reply } from '../../src/core/reply.js';
import { offerReplyFiles, writeReplyFiles } from '../../src/surfaces/cli/reply-files.js';
import { renderText } from '../../src/views/text.js';

function report(): Reply {
  return {
    ok: true,
    command: 'incident report',
    title: 'INC-4 report',
    data: { id: 'INC-4' },
    blocks: [{ kind: 'header', text: 'INC-4 report: auth down' }],
    files: [
      { name: 'INC-4.md', title: 'INC-4 post-incident report', content: Buffer.from('# INC-4: auth down\n') },
      { name: 'INC-4.png', title: 'INC-4 apps by health', content: Buffer.from([0x89, 0x50, 0x4e, 0x47]) },
    ],
  };
}

describe('files that come with an answer, in the terminal', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('--out DIR writes them (creating DIR) and the answer prints their absolute paths, as data.files does', () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rollcall-files-'));
    const out = path.join(dir, 'reports', 'nested');
    const reply = report();
    writeReplyFiles(reply, path.relative(process.cwd(), out));
    const md = path.join(out, 'INC-4.md');
    const png = path.join(out, 'INC-4.png');
    expect(reply.data.files).toEqual({ markdown: md, png });
    expect(readFileSync(md, 'utf8')).toBe('# INC-4: auth down\n');
    expect(readFileSync(png)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
    expect(renderText(reply, { color: false }).replace(/\s+/g, ' ')).toContain(`Wrote ${md} and ${png}.`);
  });

  it('without --out writes nothing and says how to get them', () => {
    const reply = report();
    offerReplyFiles(reply, 'add --out DIR to write them (rollcall ask "incident report INC-4" --out DIR)');
    expect(reply.data.files).toBeNull();
    expect(renderText(reply, { color: false }).replace(/\s+/g, ' ')).toContain(
      'INC-4.md and INC-4.png not written: add --out DIR to write them (rollcall ask "incident report INC-4" --out DIR).',
    );
  });
});
