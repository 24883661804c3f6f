import { distance } from 'fastest-levenshtein';

/**
 * Kubernetes names are at most 253 characters: a longer word is no misspelling of one, and comparing it
 * would cost length × length per candidate (a pasted megabyte once held the event loop for a minute).
 */
export const MAX_NAME_LENGTH = 253;
/** Edits beyond this make a suggestion a guess, not a correction; it also bounds the cost per candidate. */
export const MAX_SUGGESTION_DISTANCE = 8;

/** Up to `max` candidates closest to `word` (edit distance, or containing it), nearest first. */
export function closest(word: string, candidates: Iterable<string>, max = 3): string[] {
  if (word.length > MAX_NAME_LENGTH) return [];
  const lower = word.toLowerCase();
  const threshold = Math.min(MAX_SUGGESTION_DISTANCE, Math.max(1, Math.floor(word.length / 3)));
  const scored: { name: string; score: number }[] = [];
  const seen = new Set<string>();
  for (const name of candidates) {
    if (seen.has(name) || name === word) continue;
    seen.add(name);
    const candidate = name.toLowerCase();
    // Names far longer or shorter cannot be within the threshold: skip the distance.
    const d = Math.abs(candidate.length - lower.length) > threshold ? Infinity : distance(lower, candidate);
    if (d <= threshold) scored.push({ name, score: d });
    else if (lower.length >= 3 && candidate.includes(lower))
      scored.push({ name, score: threshold + 1 + (candidate.length - lower.length) / 100 });
  }
  scored.sort((a, b) => a.score - b.score || a.name.localeCompare(b.name));
  return scored.slice(0, max).map((s) => s.name);
}
