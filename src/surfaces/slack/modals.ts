import type { ModalView, WebClient } from '@slack/web-api';
import type { CommandContext, FormSpec } from '../../commands/registry.js';
import type { Reply } from '../../core/reply.js';
import { renderFormModal, SLACK_LIMITS } from '../../views/blocks.js';

/**
 * Modals: a generic `openModal`, a registry of view_submission handlers by callback_id, and forms
 * (FormSpec, from commands) rendered as modals whose submission runs a registered action.
 */
export interface ModalSubmission {
  callbackId: string;
  /** Input values by block_id (the field name). */
  values: Record<string, string>;
  /** The handler's own metadata, as given when the modal was opened. */
  metadata: string;
  user: string;
  viewId: string;
}

export interface ModalHandler {
  /** Synchronous checks; errors by block_id are shown in the modal (Slack wants them in the ack, within 3 s). */
  validate?(values: Record<string, string>): Record<string, string> | undefined;
  /** Runs after the modal closed; a returned Reply goes to where the modal was opened from. */
  submit(submission: ModalSubmission, ctx: CommandContext): Promise<Reply | undefined>;
}

const handlers = new Map<string, ModalHandler>();

export function registerModalHandler(callbackId: string, handler: ModalHandler): void {
  if (callbackId.length > SLACK_LIMITS.id)
    throw new Error(`callback_id "${callbackId.slice(0, 40)}…" is longer than Slack's 255 characters`);
  handlers.set(callbackId, handler);
}

export function findModalHandler(callbackId: string): ModalHandler | undefined {
  return handlers.get(callbackId);
}

/**
 * Where a modal's answer goes: the channel and the response_url of the command that opened it.
 * Kept in private_metadata because a view_submission carries neither.
 */
export interface ModalOrigin {
  channel?: string;
  responseUrl?: string;
}

interface MetadataEnvelope {
  m: string;
  ch?: string;
  ru?: string;
}

export function encodeModalMetadata(metadata: string, origin: ModalOrigin): string {
  const envelope: MetadataEnvelope = {
    m: metadata,
    ...(origin.channel ? { ch: origin.channel } : {}),
    ...(origin.responseUrl ? { ru: origin.responseUrl } : {}),
  };
  const text = JSON.stringify(envelope);
  if (text.length > SLACK_LIMITS.privateMetadata)
    throw new Error(
      `modal metadata is ${text.length} characters; Slack allows ${SLACK_LIMITS.privateMetadata} in private_metadata`,
    );
  return text;
}

export function decodeModalMetadata(text: string | undefined): { metadata: string; origin: ModalOrigin } {
  try {
    const e = JSON.parse(text ?? '') as MetadataEnvelope;
    if (typeof e.m === 'string') return { metadata: e.m, origin: { channel: e.ch, responseUrl: e.ru } };
  } catch {}
  return { metadata: text ?? '', origin: {} };
}

/** views.open. Slack accepts a trigger_id for 3 s after the interaction that produced it. */
export async function openModal(client: WebClient, triggerId: string, view: ModalView): Promise<string | undefined> {
  const res = await client.views.open({ trigger_id: triggerId, view });
  return res.view?.id;
}

/** Opens a FormSpec as a modal, remembering where the answer must go. */
export async function openFormModal(
  client: WebClient,
  triggerId: string,
  form: FormSpec,
  origin: ModalOrigin,
): Promise<string | undefined> {
  return openModal(client, triggerId, renderFormModal(form, encodeModalMetadata(form.metadata ?? '', origin)));
}

/** Input values of a submitted view, by block_id: text inputs, selects, checkboxes, pickers. */
export function viewValues(
  state: { values?: Record<string, Record<string, any>> } | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [blockId, actions] of Object.entries(state?.values ?? {})) {
    for (const el of Object.values(actions)) {
      const v =
        el?.value ??
        el?.selected_option?.value ??
        (Array.isArray(el?.selected_options)
          ? el.selected_options.map((o: { value: string }) => o.value).join(',')
          : undefined) ??
        el?.selected_date ??
        el?.selected_time ??
        el?.selected_user ??
        el?.selected_channel ??
        el?.selected_conversation;
      if (v !== undefined && v !== null && v !== '') out[blockId] = String(v);
    }
  }
  return out;
}
