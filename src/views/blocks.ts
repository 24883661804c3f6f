import type {
  ActionsBlock,
  Button,
  ContextBlock,
  HeaderBlock,
  HomeView,
  InputBlock,
  KnownBlock,
  ModalView,
  SectionBlock,
} from '@slack/web-api';
import type { FormField, FormSpec } from '../commands/registry.js';
import { PAGE_SIZE, type Reply, type ReplyBlock, type ReplyButton, type ReplyItem, type Tone } from '../core/reply.js';
import { link, pairSafeEnd, TONE_EMOJI, truncate } from '../core/format.js';

/**
 * Slack's Block Kit limits (docs.slack.dev/reference/block-kit, @slack/types 3.2.0). Slack rejects a whole
 * message with `invalid_blocks` when any one of them is exceeded, so every rendering goes through them.
 */
export const SLACK_LIMITS = {
  messageBlocks: 50,
  viewBlocks: 100,
  sectionText: 3000,
  headerText: 150,
  sectionFields: 10,
  fieldText: 2000,
  contextElements: 10,
  buttonText: 75,
  buttonValue: 2000,
  buttonUrl: 3000,
  actionsElements: 25,
  id: 255,
  modalTitle: 24,
  privateMetadata: 3000,
  /** Slack truncates past 40k; the fallback only feeds notifications, so keep it readable. */
  fallbackText: 3000,
} as const;

/** How many list items one page shows: a screenful; packed into sections they stay far inside 50 blocks. */
export const ITEMS_PER_PAGE = PAGE_SIZE.slack;

/** action_id prefixes the Slack listeners match on (a suffix `~n` keeps ids unique inside one actions block). */
export const ACTION_IDS = { command: 'cmd', page: 'page', link: 'link' } as const;

export interface RenderOptions {
  /** 1-based page of the reply's list items. Out-of-range pages are clamped. */
  page?: number;
  /** The command text that produced the reply; needed for "More" buttons (they re-run it). */
  commandText?: string;
  /** 50 for messages (default), 100 for modals and the App Home. */
  maxBlocks?: number;
  itemsPerPage?: number;
}

export interface RenderedBlocks {
  /** Fallback text for notifications and clients that cannot show blocks. */
  text: string;
  blocks: KnownBlock[];
  page: number;
  pages: number;
}

/** The value of a "More" button: the command to re-run and the page to show. */
export interface PageRequest {
  command: string;
  page: number;
}

export function encodePageValue(req: PageRequest): string {
  return JSON.stringify({ c: req.command, p: req.page });
}

export function decodePageValue(value: string): PageRequest | undefined {
  try {
    const parsed = JSON.parse(value) as { c?: unknown; p?: unknown };
    if (typeof parsed.c === 'string' && typeof parsed.p === 'number' && Number.isInteger(parsed.p) && parsed.p >= 1)
      return { command: parsed.c, page: parsed.p };
  } catch {}
  return undefined;
}

/** Strips the `~n` suffix that keeps action ids unique within a block. */
export function baseActionId(actionId: string): string {
  const i = actionId.lastIndexOf('~');
  return i > 0 && /^\d+$/.test(actionId.slice(i + 1)) ? actionId.slice(0, i) : actionId;
}

/**
 * Block Kit for a Reply. Pure: the same Reply gives the same blocks, so tests compare them without Slack.
 * Every output respects SLACK_LIMITS; list items beyond one page go to later pages ("More" button) when the
 * command text is known, and collapse to a count otherwise.
 */
export function renderBlocks(typedReply: Reply, opts: RenderOptions = {}): RenderedBlocks {
  const reply = withTypedMarkupAsText(typedReply);
  const maxBlocks = Math.max(3, opts.maxBlocks ?? SLACK_LIMITS.messageBlocks);
  const perPage = Math.max(1, opts.itemsPerPage ?? ITEMS_PER_PAGE);
  const totalItems = reply.blocks.reduce((n, b) => n + (b.kind === 'list' ? b.items.length : 0), 0);
  const pages = Math.max(1, Math.ceil(totalItems / perPage));
  const page = Math.min(Math.max(1, Math.floor(opts.page ?? reply.page ?? 1)), pages);
  const windowStart = (page - 1) * perPage;
  const windowEnd = windowStart + perPage;
  const commandText = opts.commandText ?? reply.pageCommand;
  const canPaginate = pages > 1 && commandText !== undefined && pageValueFits(commandText, pages);

  const body: KnownBlock[] = [];
  let offset = 0;
  let hiddenItems = 0;
  let headerSeen = false;
  for (const block of reply.blocks) {
    if (block.kind === 'list') {
      const start = offset;
      offset += block.items.length;
      const from = Math.max(start, windowStart) - start;
      const to = Math.min(offset, windowEnd) - start;
      if (to > from || (block.items.length === 0 && page === 1)) {
        body.push(...renderList(block, from, Math.max(from, to)));
      }
      if (!canPaginate && page === 1) hiddenItems += Math.max(0, block.items.length - Math.max(0, to));
      continue;
    }
    if (block.kind === 'header') {
      headerSeen = true;
      body.push(header(block.text));
      continue;
    }
    // Later pages repeat the header only: the rest of the reply was on page 1.
    if (page > 1) continue;
    body.push(...renderBlock(block));
  }
  if (page > 1 && !headerSeen) body.unshift(header(reply.title));

  const footer: KnownBlock[] = [];
  if (pages > 1 && canPaginate) {
    const last = Math.min(windowEnd, totalItems);
    footer.push(context(`Page ${page} of ${pages} · items ${windowStart + 1}–${last} of ${totalItems}`));
    const nav: ReplyButton[] = [];
    if (page > 1)
      nav.push({
        label: `Back (page ${page - 1}/${pages})`,
        action: ACTION_IDS.page,
        value: encodePageValue({ command: commandText!, page: page - 1 }),
      });
    if (page < pages)
      nav.push({
        label: `More (page ${page + 1}/${pages})`,
        action: ACTION_IDS.page,
        value: encodePageValue({ command: commandText!, page: page + 1 }),
        style: 'primary',
      });
    footer.push(...renderActions(nav));
  } else if (hiddenItems > 0) {
    footer.push(
      context(
        `…and ${hiddenItems} more not shown. Narrow the selector, or run it in a terminal with \`rollcall ask\` for the full list.`,
      ),
    );
  }

  const blocks = fitBlocks(body, footer, maxBlocks);
  return { text: fallbackText(reply, page, pages), blocks, page, pages };
}

function pageValueFits(commandText: string, pages: number): boolean {
  return encodePageValue({ command: commandText, page: pages }).length <= SLACK_LIMITS.buttonValue;
}

/** Keeps the footer (navigation) and cuts the body so the total fits, saying how much was cut. */
function fitBlocks(body: KnownBlock[], footer: KnownBlock[], maxBlocks: number): KnownBlock[] {
  if (body.length + footer.length <= maxBlocks) return [...body, ...footer];
  const room = Math.max(0, maxBlocks - footer.length - 1);
  const cut = body.length - room;
  return [
    ...body.slice(0, room),
    context(`…${cut} more blocks not shown: the answer is too long for one Slack message. Narrow the selector.`),
    ...footer,
  ];
}

function renderBlock(block: Exclude<ReplyBlock, { kind: 'list' }>): KnownBlock[] {
  switch (block.kind) {
    case 'header':
      return [header(block.text)];
    case 'text':
      return block.text.trim() ? sections(withTone(block.text, block.tone)) : [];
    case 'fields':
      return renderFields(block.fields);
    case 'context':
      return block.text.trim() ? [context(block.text)] : [];
    case 'code':
      return codeSections(block.text, block.keep ?? 'head');
    case 'actions':
      return renderActions(block.buttons);
    case 'divider':
      return [{ type: 'divider' }];
  }
}

/** Sections one code block may take: a long log must leave room in the message for the rest of the answer. */
const CODE_SECTIONS = 4;

/**
 * Verbatim text as fenced code sections, whole lines only, from the kept end until CODE_SECTIONS are
 * full; a context line says how many lines were left out. Everything in it is escaped: a log line's
 * `<!channel>` or `<https://…|…>` is text here.
 */
function codeSections(text: string, keep: 'head' | 'tail'): KnownBlock[] {
  if (!text.trim()) return [];
  // The fences take 8 characters of the section.
  const room = SLACK_LIMITS.sectionText - 8;
  // A line with its own ``` would close the fence early.
  const lines = text.split('\n').map((l) => cutToLimit(entities(l.replace(/```/g, '` ` `')), room));
  const ordered = keep === 'tail' ? [...lines].reverse() : lines;
  const chunks: string[][] = [];
  let chunk: string[] = [];
  let size = 0;
  for (const line of ordered) {
    if (chunk.length && size + 1 + line.length > room) {
      chunks.push(chunk);
      chunk = [];
      size = 0;
      if (chunks.length === CODE_SECTIONS) break;
    }
    chunk.push(line);
    size += (chunk.length > 1 ? 1 : 0) + line.length;
  }
  if (chunk.length && chunks.length < CODE_SECTIONS) chunks.push(chunk);
  const shown = chunks.reduce((n, c) => n + c.length, 0);
  if (keep === 'tail') {
    chunks.reverse();
    for (const c of chunks) c.reverse();
  }
  const out: KnownBlock[] = chunks.map((c) => ({
    type: 'section',
    text: { type: 'mrkdwn', text: '```\n' + c.join('\n') + '\n```' },
  }));
  const cut = lines.length - shown;
  if (cut > 0) {
    const note = context(
      `…${cut} ${keep === 'tail' ? 'earlier' : 'more'} line${cut === 1 ? '' : 's'} not shown: too long for one Slack message. \`rollcall ask\` in a terminal shows them all.`,
    );
    if (keep === 'tail') out.unshift(note);
    else out.push(note);
  }
  return out;
}

function renderList(block: Extract<ReplyBlock, { kind: 'list' }>, from: number, to: number): KnownBlock[] {
  const out: KnownBlock[] = [];
  const count = block.total ?? block.items.length;
  const shown = to - from;
  const range = shown < count ? ` (${shown ? `${from + 1}–${to}` : 'none'} of ${count})` : ` (${count})`;
  if (block.title) out.push(...sections(`*${block.title}*${range}`));
  if (block.items.length === 0) {
    out.push(...sections('_none_'));
    return out;
  }
  out.push(...itemSections(block.items.slice(from, to).map(itemLine)));
  if (block.total !== undefined && block.total > block.items.length && to === block.items.length)
    out.push(context(`Showing ${block.items.length} of ${block.total}: narrow the selector to see the rest.`));
  return out;
}

function itemLine(item: ReplyItem): string {
  // Commands may already link the name inside the text; a link inside a link label breaks mrkdwn.
  const label = item.url && !/<[a-z]+:\/\/[^>]*>/i.test(item.text) ? link(item.text, item.url) : item.text;
  const line = withTone(label, item.tone);
  const full = item.detail
    ? `${line}\n${item.detail
        .split(/\n+/)
        .map((d) => `      ${d}`)
        .join('\n')}`
    : line;
  // One item must never need more than one section on its own.
  return cutToLimit(full, SLACK_LIMITS.sectionText - 100);
}

function renderFields(fields: { label: string; value: string }[]): KnownBlock[] {
  const out: KnownBlock[] = [];
  for (let i = 0; i < fields.length; i += SLACK_LIMITS.sectionFields) {
    const chunk = fields.slice(i, i + SLACK_LIMITS.sectionFields);
    const block: SectionBlock = {
      type: 'section',
      fields: chunk.map((f) => ({
        type: 'mrkdwn',
        text: cutToLimit(
          escapeMrkdwn(`*${f.label.trim() || '—'}*\n${f.value.trim() ? f.value : '—'}`),
          SLACK_LIMITS.fieldText,
        ),
      })),
    };
    out.push(block);
  }
  return out;
}

function renderActions(buttons: ReplyButton[]): KnownBlock[] {
  const elements = buttons
    .map(button)
    .filter((b): b is Omit<Button, 'action_id'> & { action_id: string } => b !== undefined);
  const out: KnownBlock[] = [];
  for (let i = 0; i < elements.length; i += SLACK_LIMITS.actionsElements) {
    const chunk = elements.slice(i, i + SLACK_LIMITS.actionsElements);
    // Slack requires action_id to be unique within its block.
    const seen = new Map<string, number>();
    for (const el of chunk) {
      const n = seen.get(el.action_id) ?? 0;
      seen.set(el.action_id, n + 1);
      if (n > 0) el.action_id = `${el.action_id.slice(0, SLACK_LIMITS.id - 6)}~${n}`;
    }
    const block: ActionsBlock = { type: 'actions', elements: chunk };
    out.push(block);
  }
  return out;
}

function button(b: ReplyButton): (Button & { action_id: string }) | undefined {
  let actionId: string;
  let value: string | undefined;
  if (b.url) {
    if (b.url.length > SLACK_LIMITS.buttonUrl) return undefined;
    actionId = ACTION_IDS.link;
  } else if (b.command !== undefined) {
    actionId = ACTION_IDS.command;
    value = b.command;
  } else if (b.action) {
    actionId = b.action;
    value = b.value;
  } else return undefined;
  // A cut-short command or action value would run something else: drop the button instead.
  if (value !== undefined && (value.length > SLACK_LIMITS.buttonValue || value.length === 0)) return undefined;
  if (actionId.length > SLACK_LIMITS.id) return undefined;
  const el: Button & { action_id: string } = {
    type: 'button',
    text: { type: 'plain_text', text: cutToLimit(b.label.trim() || 'Open', SLACK_LIMITS.buttonText), emoji: true },
    action_id: actionId,
  };
  if (value !== undefined) el.value = value;
  if (b.url) el.url = b.url;
  if (b.style) el.style = b.style;
  return el;
}

function header(text: string): HeaderBlock {
  return {
    type: 'header',
    text: { type: 'plain_text', text: cutToLimit(text.trim() || 'rollcall', SLACK_LIMITS.headerText), emoji: true },
  };
}

function context(text: string): ContextBlock {
  return {
    type: 'context',
    elements: [{ type: 'mrkdwn', text: cutToLimit(text.trim() ? escapeMrkdwn(text) : '—', SLACK_LIMITS.sectionText) }],
  };
}

/** Section blocks for mrkdwn text, split on line boundaries so none exceeds 3000 characters. */
function sections(text: string): SectionBlock[] {
  return splitText(escapeMrkdwn(text), SLACK_LIMITS.sectionText).map((chunk) => ({
    type: 'section',
    text: { type: 'mrkdwn', text: chunk },
  }));
}

/** Sections of whole list items: an item and its detail lines always stay in one section. */
function itemSections(lines: string[]): SectionBlock[] {
  const out: SectionBlock[] = [];
  let chunk: string[] = [];
  let size = 0;
  // Escaping lengthens a line (&lt;): cut it to size afterwards.
  for (const line of lines.map((l) => cutToLimit(escapeMrkdwn(l), SLACK_LIMITS.sectionText - 100))) {
    if (chunk.length && size + 1 + line.length > SLACK_LIMITS.sectionText) {
      out.push({ type: 'section', text: { type: 'mrkdwn', text: chunk.join('\n') } });
      chunk = [];
      size = 0;
    }
    chunk.push(line);
    size += (size ? 1 : 0) + line.length;
  }
  if (chunk.length) out.push({ type: 'section', text: { type: 'mrkdwn', text: chunk.join('\n') } });
  return out;
}

// Our own markup, kept as is: links <https://…|label>, user <@U…> and channel <#C…|name> mentions,
// and entities already escaped. Anything else with & < > is text (Argo CD's "<nil>", a user's
// "<!channel>") and must be escaped, or Slack reads it as markup.
const OWN_MARKUP =
  /<(?:(?:https?|mailto):[^<>\s|]+(?:\|[^<>]*)?|@[UWB][A-Z0-9]+|#C[A-Z0-9]+(?:\|[^<>]*)?)>|&(?:amp|lt|gt);/g;

const entities = (markup: string) => markup.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * A link or mention that echoes what a user typed (reply.userText) is shown as the text it was: the bot
 * must not post `<https://evil|Argo CD>` or `<@U…>` as its own link or ping because someone typed it.
 * It is recognised by its opening (`<https://evil`, `<@U0123`), so a changed label does not hide it.
 */
export function withTypedMarkupAsText(reply: Reply): Reply {
  const typed = (reply.userText ?? []).join('\n').toLowerCase();
  if (!typed.includes('<')) return reply;
  const fix = (text: string) =>
    text.replace(OWN_MARKUP, (m) =>
      m.startsWith('&') || !typed.includes(m.split(/[|>]/)[0].toLowerCase()) ? m : entities(m),
    );
  const blocks = reply.blocks.map((b): ReplyBlock => {
    switch (b.kind) {
      case 'text':
      case 'context':
        return { ...b, text: fix(b.text) };
      case 'fields':
        return { ...b, fields: b.fields.map((f) => ({ label: fix(f.label), value: fix(f.value) })) };
      case 'list':
        return {
          ...b,
          ...(b.title ? { title: fix(b.title) } : {}),
          items: b.items.map((i) => ({ ...i, text: fix(i.text), ...(i.detail ? { detail: fix(i.detail) } : {}) })),
        };
      default:
        return b;
    }
  });
  return {
    ...reply,
    title: fix(reply.title),
    blocks,
    ...(reply.error ? { error: { ...reply.error, message: fix(reply.error.message) } } : {}),
  };
}

/** Escapes &, < and > for Slack mrkdwn, leaving our own links and mentions, and a leading `>` quote, intact. */
export function escapeMrkdwn(text: string): string {
  const escape = (part: string) =>
    part
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/(?<!^|\n)>/g, '&gt;');
  let out = '';
  let last = 0;
  for (const m of text.matchAll(OWN_MARKUP)) {
    out += escape(text.slice(last, m.index)) + m[0];
    last = m.index! + m[0].length;
  }
  return out + escape(text.slice(last));
}

/** Splits on line boundaries; a single over-long line is split at a space when there is one. */
export function splitText(text: string, max: number): string[] {
  const chunks: string[] = [];
  let lines: string[] = [];
  let size = -1;
  const flush = () => {
    if (lines.length) chunks.push(lines.join('\n'));
    lines = [];
    size = -1;
  };
  for (let line of text.split('\n')) {
    while (line.length > max) {
      flush();
      let cut = line.lastIndexOf(' ', max);
      if (cut < max / 2) cut = max;
      chunks.push(line.slice(0, cut));
      line = line.slice(cut).replace(/^ /, '');
    }
    if (size + 1 + line.length > max) flush();
    lines.push(line);
    size += 1 + line.length;
  }
  flush();
  // Slack rejects a section whose text is blank.
  const visible = chunks.filter((c) => c.trim().length > 0);
  return visible.length ? visible : ['_(empty)_'];
}

/**
 * Meets a Slack limit exactly: the first max - 1 characters and an ellipsis, wherever that falls (code,
 * labels and guards on text the commands already shortened at a word).
 */
export function cutToLimit(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, pairSafeEnd(text, max - 1))}…`;
}

const LEADING_EMOJI = /^:[a-z0-9_+'-]+:/;

function withTone(text: string, tone?: Tone): string {
  return tone && !LEADING_EMOJI.test(text) ? `${TONE_EMOJI[tone]} ${text}` : text;
}

function fallbackText(reply: Reply, page: number, pages: number): string {
  const first = reply.blocks.find((b): b is Extract<ReplyBlock, { kind: 'text' }> => b.kind === 'text')?.text;
  const parts = [reply.title || reply.command || 'rollcall'];
  if (reply.error) parts.push(reply.error.message);
  else if (first) parts.push(first);
  if (pages > 1) parts.push(`(page ${page}/${pages})`);
  // The notification text is mrkdwn too: an echoed <!channel> here would ping the channel.
  return cutToLimit(
    escapeMrkdwn(parts.join(' — ').replace(/\s+/g, ' ').trim()) || 'rollcall',
    SLACK_LIMITS.fallbackText,
  );
}

/** The App Home tab: several replies stacked, within the 100-block limit of a view. */
export function renderHomeView(replies: Reply[], opts: { commandTexts?: (string | undefined)[] } = {}): HomeView {
  const budget = SLACK_LIMITS.viewBlocks;
  const blocks: KnownBlock[] = [];
  replies.forEach((reply, i) => {
    const remaining = budget - blocks.length - (i < replies.length - 1 ? 1 : 0);
    if (remaining < 3) return;
    if (blocks.length) blocks.push({ type: 'divider' });
    blocks.push(
      ...renderBlocks(reply, {
        maxBlocks: Math.min(remaining, SLACK_LIMITS.messageBlocks),
        commandText: opts.commandTexts?.[i],
      }).blocks,
    );
  });
  return { type: 'home', blocks: blocks.slice(0, budget) };
}

/** A read-only modal showing a reply (used when a button is pressed where no response_url exists, e.g. the Home tab). */
export function renderReplyModal(reply: Reply, opts: { commandText?: string; page?: number } = {}): ModalView {
  const rendered = renderBlocks(reply, { ...opts, maxBlocks: SLACK_LIMITS.viewBlocks });
  return {
    type: 'modal',
    title: { type: 'plain_text', text: truncate(reply.title || 'rollcall', SLACK_LIMITS.modalTitle) },
    close: { type: 'plain_text', text: 'Close' },
    blocks: rendered.blocks,
  };
}

/** callback_id of a modal built from a FormSpec; the submission runs the named action. */
export const FORM_CALLBACK_PREFIX = 'form:';
/** action_id of every input in a form modal; the block_id is the field name. */
export const FORM_INPUT_ACTION = 'value';

/** A modal for a transport-neutral form (runbook parameters ...). `privateMetadata` must fit 3000 chars. */
export function renderFormModal(form: FormSpec, privateMetadata = ''): ModalView {
  const blocks: KnownBlock[] = [];
  if (form.intro) blocks.push(...sections(form.intro));
  for (const field of form.fields.slice(0, SLACK_LIMITS.viewBlocks - blocks.length)) blocks.push(formInput(field));
  return {
    type: 'modal',
    callback_id: `${FORM_CALLBACK_PREFIX}${form.action}`.slice(0, SLACK_LIMITS.id),
    title: { type: 'plain_text', text: truncate(form.title || 'rollcall', SLACK_LIMITS.modalTitle) },
    submit: { type: 'plain_text', text: cutToLimit(form.submitLabel ?? 'Preview', SLACK_LIMITS.modalTitle) },
    close: { type: 'plain_text', text: 'Cancel' },
    private_metadata: privateMetadata.slice(0, SLACK_LIMITS.privateMetadata),
    blocks,
  };
}

function formInput(field: FormField): InputBlock {
  const label = { type: 'plain_text' as const, text: cutToLimit(field.label || field.name, 2000) };
  const base = {
    type: 'input' as const,
    block_id: field.name.slice(0, SLACK_LIMITS.id),
    label,
    optional: !field.required,
  };
  const hint = field.hint ? { hint: { type: 'plain_text' as const, text: cutToLimit(field.hint, 2000) } } : {};
  if (field.type === 'enum' || field.type === 'bool') {
    const values = field.type === 'bool' ? ['true', 'false'] : (field.options ?? []).slice(0, 100);
    const options = values.map((v) => ({
      text: { type: 'plain_text' as const, text: cutToLimit(v, 75) },
      value: v.slice(0, 150),
    }));
    const initial = options.find((o) => o.value === field.default);
    return {
      ...base,
      ...hint,
      element: {
        type: 'static_select',
        action_id: FORM_INPUT_ACTION,
        options,
        ...(initial ? { initial_option: initial } : {}),
      },
    };
  }
  const placeholder =
    field.type === 'duration'
      ? 'e.g. 10m'
      : field.type === 'selector'
        ? 'e.g. auth-config-* or env=prod'
        : field.type === 'int'
          ? 'a number'
          : undefined;
  return {
    ...base,
    ...hint,
    element: {
      type: 'plain_text_input',
      action_id: FORM_INPUT_ACTION,
      ...(field.default !== undefined ? { initial_value: field.default } : {}),
      ...(placeholder ? { placeholder: { type: 'plain_text', text: placeholder } } : {}),
    },
  };
}
