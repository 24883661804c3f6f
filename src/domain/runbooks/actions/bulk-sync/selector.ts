import type { AppSelector } from '../../../../fleet/select.js';

const SELECTOR_KEYS: Record<string, keyof AppSelector> = {
  cluster: 'cluster',
  project: 'project',
  appset: 'appSet',
  instance: 'instance',
  labels: 'labels',
  l: 'labels',
};

/**
 * The `selector` param: names or globs (comma or space separated) plus optional `cluster:X`,
 * `project:X`, `appset:X`, `instance:X` tokens and, last, `labels:<k8s selector>`, which takes the
 * rest of the text because set-based selectors have spaces (`labels:env in (prod, staging)`).
 * `auth-config-* cluster:prod-eu1` → {patterns: ['auth-config-*'], cluster: 'prod-eu1'}.
 */
export function parseSelectorParam(text: string): AppSelector {
  const sel: AppSelector = {};
  const patterns: string[] = [];
  const labelsAt = /(?:^|\s)(?:labels|l):/i.exec(text);
  if (labelsAt) {
    const labels = text.slice(labelsAt.index + labelsAt[0].length).trim();
    if (labels) sel.labels = labels;
    text = text.slice(0, labelsAt.index);
  }
  for (const token of text.trim().split(/\s+/).filter(Boolean)) {
    const m = /^([a-z]+):(.+)$/i.exec(token);
    const key = m ? SELECTOR_KEYS[m[1].toLowerCase()] : undefined;
    if (m && key) (sel as Record<string, string>)[key] = m[2];
    else patterns.push(...token.split(',').filter(Boolean));
  }
  if (patterns.length) sel.patterns = patterns;
  return sel;
}

/** The inverse, for `/argo sync <globs> cluster=X -l sel`. */
export function formatSelectorParam(sel: AppSelector): string {
  const parts = [...(sel.patterns ?? [])];
  if (sel.cluster) parts.push(`cluster:${sel.cluster}`);
  if (sel.project) parts.push(`project:${sel.project}`);
  if (sel.appSet) parts.push(`appset:${sel.appSet}`);
  if (sel.instance) parts.push(`instance:${sel.instance}`);
  // Last: it takes the rest of the text (see parseSelectorParam).
  if (sel.labels) parts.push(`labels:${sel.labels.trim()}`);
  return parts.join(' ');
}
