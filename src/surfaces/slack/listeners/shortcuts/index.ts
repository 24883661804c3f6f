import type { App } from '@slack/bolt';
import type { SlackDeps } from '../../context.js';
import { addToIncidentTimeline, ADD_TO_TIMELINE_CALLBACK } from './add-to-incident-timeline.js';

export function registerShortcutListeners(app: App, deps: SlackDeps): void {
  app.shortcut(ADD_TO_TIMELINE_CALLBACK, addToIncidentTimeline(deps));
}
