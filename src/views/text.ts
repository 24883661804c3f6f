import {
  PAGE_SIZE,
  replyPages,
  type Reply,
  type ReplyBlock,
  type ReplyButton,
  type ReplyItem,
  type Tone,
} from '../core/reply.js';

/**
 * Reply -> terminal text: the same answer Slack shows, for `rollcall ask` and `rollcall demo`.
 * Replies carry Slack mrkdwn (*bold*, `code`, <url|label>, :emoji:); this converts it.
 */

export interface TextOptions {
  /** ANSI bold/colours. Default false (pipes, logs, tests). */
  color?: boolean;
  /** How links print: "inline" = `label (url)` (default), "label" = the label only. */
  links?: 'inline' | 'label';
  /** Terminal width for wrapping details; 0 = no wrapping. Default 0. */
  width?: number;
  /**
   * Slack-only buttons (Confirm, Approve, Pause ...): "hint" prints the terminal command that does
   * the same (default); "omit" leaves them out, for a caller that offers them itself (the demo).
   */
  actions?: 'hint' | 'omit';
  /** 1-based page of the reply's list items (default: the page the reply asks for, else 1). */
  page?: number;
  /** List items per page. @defaultValue PAGE_SIZE.terminal */
  itemsPerPage?: number;
}

const TONE_SYMBOL: Record<Tone, string> = {
  ok: '✔',
  error: '✖',
  warn: '⚠',
  progress: '⏳',
  unknown: '?',
  info: 'ℹ',
};

const TONE_COLOR: Record<Tone, string> = {
  ok: '32',
  error: '31',
  warn: '33',
  progress: '36',
  unknown: '90',
  info: '34',
};

// The Slack emoji names our replies use, as terminal symbols; unknown names print as written.
const EMOJI: Record<string, string> = {
  x: '✖',
  heavy_multiplication_x: '✖',
  white_check_mark: '✔',
  heavy_check_mark: '✔',
  ballot_box_with_check: '✔',
  warning: '⚠',
  rotating_light: '‼',
  red_circle: '●',
  large_green_circle: '●',
  large_yellow_circle: '●',
  white_circle: '○',
  black_circle: '●',
  hourglass: '⌛',
  hourglass_flowing_sand: '⏳',
  grey_question: '?',
  question: '?',
  information_source: 'ℹ',
  arrow_forward: '▶',
  arrow_right: '→',
  arrows_counterclockwise: '↻',
  repeat: '↻',
  pause_button: '⏸',
  double_vertical_bar: '⏸',
  stop_button: '⏹',
  no_entry: '⛔',
  no_entry_sign: '⛔',
  lock: '🔒',
  key: '⚿',
  rocket: '»',
  memo: '✎',
  link: '↗',
  white_circle_small: '◦',
};

// Private-use placeholder for protected code spans (never in Argo CD or Slack text).
const MARK = '\uE000';
const MARK_RE = /\uE000(\d+)\uE000/g;
// eslint-disable-next-line no-control-regex -- ANSI escapes are what we strip
const ANSI_RE = /\u001b\[[0-9;]*m/g;

const ansi = (on: boolean, codes: string, text: string) => (on ? `\u001b[${codes}m${text}\u001b[0m` : text);

/** Slack mrkdwn -> terminal text. */
export function mrkdwnToText(text: string, opts: TextOptions = {}): string {
  const color = opts.color ?? false;
  const links = opts.links ?? 'inline';
  // Code spans are literal: keep globs like `auth-*` from being read as bold.
  const codes: string[] = [];
  let out = text.replace(/`([^`\n]+)`/g, (_m, inner: string) => {
    codes.push(inner);
    return `${MARK}${codes.length - 1}${MARK}`;
  });
  out = out.replace(/<([^<>\s|]+)(?:\|([^<>]*))?>/g, (_m, target: string, label?: string) => {
    if (target.startsWith('@')) return `@${label || target.slice(1)}`;
    if (target.startsWith('#')) return `#${label || target.slice(1)}`;
    if (target.startsWith('!')) return `@${(label || target.slice(1)).replace(/^subteam\^/, '')}`;
    if (!label || label === target) return color ? ansi(true, '4', target) : target;
    const shown = color ? ansi(true, '4', label) : label;
    return links === 'label' ? shown : `${shown} (${target})`;
  });
  out = out.replace(/:([a-z0-9_+-]+):/g, (m, name: string) => EMOJI[name] ?? m);
  out = out.replace(
    /(^|[\s(>])\*(\S(?:[^*\n]*?\S)?)\*(?=$|[\s).,:;!?])/gm,
    (_m, pre: string, inner: string) => pre + (color ? ansi(true, '1', inner) : inner),
  );
  out = out.replace(
    /(^|[\s(])_(\S(?:[^_\n]*?\S)?)_(?=$|[\s).,:;!?])/gm,
    (_m, pre: string, inner: string) => pre + (color ? ansi(true, '3', inner) : inner),
  );
  out = out.replace(/^> ?/gm, '│ ');
  // A command in a code span is typed without Slack's slash command in a terminal; the span itself is
  // Slack markup, shown as a colour or not at all.
  out = out.replace(MARK_RE, (_m, i: string) => {
    const literal = codes[Number(i)].replace(/^\/argo\s+/, '');
    return color ? ansi(true, '36', literal) : literal;
  });
  return out.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

function toneSymbol(tone: Tone | undefined, color: boolean): string {
  if (!tone) return '•';
  return ansi(color, TONE_COLOR[tone], TONE_SYMBOL[tone]);
}

// Item text often starts with its own emoji; don't print two symbols.
function startsWithSymbol(text: string): boolean {
  return /^:[a-z0-9_+-]+:/.test(text);
}

function indent(text: string, prefix: string): string {
  return text
    .split('\n')
    .map((line) => prefix + line)
    .join('\n');
}

function wrap(text: string, width: number, prefix: string): string {
  if (!width) return indent(text, prefix);
  const lines: string[] = [];
  for (const para of text.split('\n')) {
    let line = '';
    for (const word of para.split(' ')) {
      if (line && visibleLength(prefix + line + ' ' + word) > width) {
        lines.push(prefix + line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    lines.push(prefix + line);
  }
  return lines.join('\n');
}

function visibleLength(text: string): number {
  return [...text.replace(ANSI_RE, '')].length;
}

function renderItem(item: ReplyItem, opts: TextOptions): string {
  const color = opts.color ?? false;
  const text = mrkdwnToText(item.text, opts);
  const head = startsWithSymbol(item.text) ? `  ${text}` : `  ${toneSymbol(item.tone, color)} ${text}`;
  const lines = [head];
  if (item.detail) lines.push(wrap(mrkdwnToText(item.detail, opts), opts.width ?? 0, '      '));
  // The URL is already in the text when the text links it.
  if (item.url && !item.text.includes(item.url) && (opts.links ?? 'inline') === 'inline')
    lines.push(`      ${ansi(color, '4', item.url)}`);
  return lines.join('\n');
}

/** The terminal command that does what a run button does: `run.approve` on r-abc12 -> `runs approve r-abc12`. */
function terminalEquivalent(b: ReplyButton): string | undefined {
  const verb = /^run\.(confirm|approve|cancel|pause|resume|abort)$/.exec(b.action ?? '')?.[1];
  return verb && b.value ? `runs ${verb} ${b.value}` : undefined;
}

function renderButton(
  b: ReplyButton,
  color: boolean,
  actions: 'hint' | 'omit',
  self: string | undefined,
): string | undefined {
  // "Refresh" is a button in Slack; in a terminal, suggesting the command just run is noise.
  if (b.command && b.command === self) return undefined;
  if (b.command) return `→ try: ${ansi(color, '36', b.command)}`;
  if (b.url) return `→ ${b.label}: ${b.url}`;
  if (!b.action) return `→ ${b.label}`;
  if (actions === 'omit') return undefined;
  const equivalent = terminalEquivalent(b);
  return equivalent ? `→ ${b.label}: ${ansi(color, '36', equivalent)}` : undefined;
}

function renderBlock(block: ReplyBlock, opts: TextOptions, self?: string): string {
  const color = opts.color ?? false;
  switch (block.kind) {
    case 'header': {
      const text = mrkdwnToText(block.text, opts);
      return color ? ansi(true, '1', text) : `${text}\n${'─'.repeat(Math.min(visibleLength(text), 72))}`;
    }
    case 'text': {
      const text = mrkdwnToText(block.text, opts);
      return block.tone && !startsWithSymbol(block.text) ? `${toneSymbol(block.tone, color)} ${text}` : text;
    }
    case 'fields': {
      const width = Math.max(...block.fields.map((f) => visibleLength(f.label)));
      return block.fields
        .map((f) => {
          const label = `${f.label}:`.padEnd(width + 3);
          const value = mrkdwnToText(f.value, opts)
            .split('\n')
            .join(`\n${' '.repeat(width + 3)}`);
          return `${color ? ansi(true, '1', label) : label}${value}`;
        })
        .join('\n');
    }
    case 'list': {
      const lines: string[] = [];
      // A list that states its full count carries it in the title, as in Slack. Without one, the items here may be
      // a page of the list (the page footer gives the range), so no count is shown.
      const title =
        block.title &&
        `${mrkdwnToText(block.title, opts)}${block.total !== undefined ? ` (${block.total.toLocaleString('en-US')})` : ''}`;
      if (title) lines.push(color ? ansi(true, '1', title) : `${title}:`);
      for (const item of block.items) lines.push(renderItem(item, opts));
      if (block.total !== undefined && block.total > block.items.length)
        lines.push(`  … and ${(block.total - block.items.length).toLocaleString('en-US')} more`);
      return lines.join('\n');
    }
    case 'context':
      return ansi(color, '2', mrkdwnToText(block.text, opts));
    case 'code':
      return block.text;
    case 'actions':
      return block.buttons
        .map((b) => renderButton(b, color, opts.actions ?? 'hint', self))
        .filter((line): line is string => line !== undefined)
        .join('\n');
    case 'divider':
      return '';
  }
}

/** The whole reply as terminal text, blocks separated by blank lines; list items page like in Slack. */
export function renderText(reply: Reply, opts: TextOptions = {}): string {
  // Without a command to re-run for the next page (a runbook preview), the whole answer is the only page.
  const perPage =
    reply.pageCommand === undefined && opts.itemsPerPage === undefined
      ? Number.POSITIVE_INFINITY
      : Math.max(1, opts.itemsPerPage ?? PAGE_SIZE.terminal);
  const pages = replyPages(reply, perPage);
  const page = Math.min(Math.max(1, Math.floor(opts.page ?? reply.page ?? 1)), pages);
  const windowStart = page === 1 ? 0 : (page - 1) * perPage;
  const windowEnd = windowStart + perPage;
  let offset = 0;
  const blocks: ReplyBlock[] = [];
  for (const block of reply.blocks) {
    if (block.kind === 'list') {
      const start = offset;
      offset += block.items.length;
      const items = block.items.slice(Math.max(0, windowStart - start), Math.max(0, windowEnd - start));
      // "… and N more" counts what the command itself left out of the list: said once, under its last item.
      const reachesEnd = windowEnd >= offset;
      const cut = (block.total ?? block.items.length) - block.items.length;
      if (items.length || (page === 1 && !block.items.length))
        blocks.push({ ...block, items, total: reachesEnd && cut > 0 ? items.length + cut : undefined });
    } else if (page === 1 || block.kind === 'header') blocks.push(block);
  }
  const self = reply.pageCommand;
  const parts = blocks
    .map((b) => renderBlock(b, opts, self))
    .filter((p, i, all) => p !== '' || (i > 0 && all[i - 1] !== ''));
  if (pages > 1) {
    const next =
      page < pages && self ? ` · next: ${ansi(opts.color ?? false, '36', `${self} --page ${page + 1}`)} (or more)` : '';
    parts.push(
      ansi(
        opts.color ?? false,
        '2',
        `Page ${page} of ${pages} · items ${windowStart + 1}–${Math.min(windowEnd, offset)} of ${offset}${next}`,
      ),
    );
  }
  if (!reply.blocks.length) {
    if (reply.error)
      parts.push(`${toneSymbol('error', opts.color ?? false)} ${mrkdwnToText(reply.error.message, opts)}`);
    else parts.push(reply.title);
  }
  return (
    parts
      .join('\n\n')
      .replace(/\n{3,}/g, '\n\n')
      .trimEnd() + '\n'
  );
}
