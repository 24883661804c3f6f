/**
 * The annotations rollcall's `pause` writes on an ApplicationSet (Argo CD has no pause of its own): who
 * paused it and when. The pause runbook writes them; the rules read them to tell a held rollout from a stuck one.
 */
export const PAUSED_BY = 'rollcall.io/paused-by';
export const PAUSED_AT = 'rollcall.io/paused-at';
