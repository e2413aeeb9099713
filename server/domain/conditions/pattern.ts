import { RE2JS } from 're2js';
import { CONDITION_LIMITS } from './limits';

/**
 * `$regex` patterns run on RE2 (re2js): matching time is linear in the input whatever the
 * pattern, so no pattern can hang a server or an app. Compiled patterns are kept, a bounded number.
 */
const compiled = new Map<string, RE2JS | null>();
const KEPT = 500;

/**
 * The compiled pattern, or null when RE2 refuses it (syntax, lookaround, backreferences, repeats
 * over 1000) or it compiles to more instructions than the limit.
 */
export function compilePattern(pattern: string, caseInsensitive: boolean): RE2JS | null {
  const key = (caseInsensitive ? 'i/' : '-/') + pattern;
  let found = compiled.get(key);
  if (found === undefined) {
    try {
      found = RE2JS.compile(pattern, caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0);
      if (found.programSize() > CONDITION_LIMITS.patternInstructions) found = null;
    } catch {
      found = null;
    }
    if (compiled.size >= KEPT) compiled.clear();
    compiled.set(key, found);
  }
  return found;
}

/** Whether the pattern matches somewhere in the text; false when the pattern does not compile. */
export function patternFinds(pattern: unknown, text: string, caseInsensitive: boolean): boolean {
  if (typeof pattern !== 'string') return false;
  return compilePattern(pattern, caseInsensitive)?.test(text) ?? false;
}
