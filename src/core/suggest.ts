import { distance } from 'fastest-levenshtein';

/**
 * Kubernetes names are at most 253 characters: a longer word is no misspelling of one, and comparing it
 * would cost length × length per candidate (a pasted megabyte once held the event loop for a minute).
 */
export const MAX_NAME_LENGTH = 253;
/** Edits beyond this make a suggestion a guess, not a correction; it also bounds the cost per candidate. */
export const MAX_SUGGESTION_DISTANCE = 8;

/**
 * The closest candidates to a mistyped word, best first, and only close ones: every "did you mean" in
 * rollcall (names of apps, runbooks, params, enum values, run ids) comes from here, so a typo is helped
 * the same way wherever it is made. Prefix and substring matches rank ahead of edit distance because
 * on-call types the start of a name ("payments" for payments-prod-us1).
 */
export function suggest(word: string, candidates: Iterable<string>, max = 3): string[] {
  return suggestScored(word, candidates, max).map((s) => s.name);
}

/** suggest() with the scores (lower is closer), to merge suggestions of several kinds of names. */
export function suggestScored(word: string, candidates: Iterable<string>, max = 3): { name: string; score: number }[] {
  const needle = word.toLowerCase();
  if (!needle || needle.length > MAX_NAME_LENGTH) return [];
  const limit = Math.min(MAX_SUGGESTION_DISTANCE, Math.max(2, Math.floor(needle.length / 3)));
  const scored: { name: string; score: number }[] = [];
  const seen = new Set<string>();
  for (const name of candidates) {
    if (seen.has(name)) continue;
    seen.add(name);
    const lower = name.toLowerCase();
    let score: number;
    if (lower === needle) score = 0;
    else if (lower.startsWith(needle)) score = 1 + (lower.length - needle.length) / 1000;
    else if (needle.length >= 3 && lower.includes(needle)) score = 2 + (lower.length - needle.length) / 1000;
    else {
      // Cheap bound first: names far longer or shorter cannot be within the limit.
      if (Math.abs(lower.length - needle.length) > limit) continue;
      const d = distance(needle, lower);
      if (d > limit) continue;
      score = 3 + d;
    }
    scored.push({ name, score });
  }
  scored.sort((a, b) => a.score - b.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return scored.slice(0, max);
}
