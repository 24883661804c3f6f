import {
  LabelSelectorSyntaxError,
  matchesLabels,
  parseLabelSelector,
  type LabelRequirement,
} from '../infra/argocd/labels.js';

/**
 * The simulator reads label selectors with the shared Kubernetes matcher (argocd/labels.ts), so a
 * selector picks the same objects here as in the fleet; only its error is the simulator's own, which
 * the HTTP handlers turn into Argo CD's and Kubernetes' error answers.
 */
export type SimLabelRequirement = LabelRequirement;

export class SimSelectorError extends Error {
  constructor(message: string) {
    super(message);
  }
}

/** Parses a selector; throws SimSelectorError naming the column and the problem. */
export function parseSimSelector(text: string): SimLabelRequirement[] {
  try {
    return parseLabelSelector(text);
  } catch (error) {
    if (error instanceof LabelSelectorSyntaxError) throw new SimSelectorError(error.message);
    throw error;
  }
}

export const simLabelsMatch = matchesLabels;
