/**
 * The Web API methods rollcall calls and the bot scope each needs. deploy/slack/manifest.yaml asks for exactly
 * these scopes (a test compares them, and another checks src/slack calls no method missing here).
 * views.* and response_url need no scope; `commands` is for the slash command itself.
 */
export const WEB_API_METHODS: Record<string, string | null> = {
  'auth.test': null,
  'chat.postMessage': 'chat:write',
  'chat.update': 'chat:write',
  'chat.postEphemeral': 'chat:write',
  'views.open': null,
  'views.update': null,
  'views.publish': null,
  // Incidents: their own channel (incidents.createChannel) and the report uploaded to the thread.
  'conversations.create': 'channels:manage',
  'conversations.invite': 'channels:manage',
  'files.uploadV2': 'files:write',
  'files.getUploadURLExternal': 'files:write',
  'files.completeUploadExternal': 'files:write',
};

/**
 * `chat:write.public`: run progress and digests go to channels from config (alerts.channel, digests[].channel)
 * that the bot may never have been invited to; without it chat.postMessage fails with not_in_channel.
 */
export const BOT_SCOPES: readonly string[] = [
  'commands',
  ...new Set(Object.values(WEB_API_METHODS).filter((s): s is string => s !== null)),
  'chat:write.public',
].sort();
