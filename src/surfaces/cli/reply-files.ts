import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Reply } from '../../core/reply.js';

const FILE_KINDS: Record<string, string> = { '.md': 'markdown', '.png': 'png' };

/**
 * Writes the files an answer comes with (a report and its chart) under `dir`, and says where twice: in
 * `data.files` (kind → absolute path, for --json) and in a last line of the answer, for whoever reads it.
 */
export function writeReplyFiles(reply: Reply, dir: string): void {
  mkdirSync(dir, { recursive: true });
  const files: Record<string, string> = {};
  const written: string[] = [];
  for (const f of reply.files ?? []) {
    const file = path.resolve(dir, f.name);
    writeFileSync(file, f.content);
    files[FILE_KINDS[path.extname(f.name)] ?? f.name] = file;
    written.push(file);
  }
  reply.data.files = files;
  reply.blocks.push({ kind: 'context', text: `Wrote ${written.map((f) => `\`${f}\``).join(' and ')}.` });
}

/** An answer's files left unwritten: `data.files` is null, and the answer says what writes them. */
export function offerReplyFiles(reply: Reply, howToWrite: string): void {
  reply.data.files = null;
  const names = (reply.files ?? []).map((f) => f.name).join(' and ');
  reply.blocks.push({ kind: 'context', text: `${names} not written: ${howToWrite}.` });
}
