import { RE2JS, RE2Set } from 're2js';
import { CONDITION_LIMITS } from './limits';

/**
 * `$regex` patterns run on RE2 (re2js): matching time is linear in the input whatever the
 * pattern, so no pattern can hang a server or an app. A compiled pattern keeps a lazy automaton
 * of at most AUTOMATON_BYTES (RE2 falls back to its automaton-free matcher past it), and a
 * bounded number of compiled patterns are kept.
 */
export interface CompiledPattern {
  /** RE2 instructions: what one character of input costs at most (a condition's steps count them). */
  instructions: number;
  finds(text: string): boolean;
}

const compiled = new Map<string, CompiledPattern | null>();
const KEPT = 100;
const AUTOMATON_BYTES = 256 * 1024;

/**
 * The compiled pattern, or null when RE2 refuses it (syntax, lookaround, backreferences, repeats
 * over 1000) or it compiles to more instructions than the limit.
 */
export function compilePattern(pattern: string, caseInsensitive: boolean): CompiledPattern | null {
  const key = (caseInsensitive ? 'i/' : '-/') + pattern;
  let found = compiled.get(key);
  if (found === undefined) {
    found = compile(pattern, caseInsensitive);
    if (compiled.size >= KEPT) compiled.clear();
    compiled.set(key, found);
  }
  return found;
}

function compile(pattern: string, caseInsensitive: boolean): CompiledPattern | null {
  const flags = caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0;
  try {
    const instructions = RE2JS.compile(pattern, flags).programSize();
    if (instructions > CONDITION_LIMITS.patternInstructions) return null;
    // A set of one pattern: RE2Set is where re2js lets the automaton's memory be bounded.
    const set = new RE2Set(RE2Set.UNANCHORED, flags, AUTOMATON_BYTES);
    set.add(pattern);
    set.compile();
    return { instructions, finds: (text) => set.match(text).length > 0 };
  } catch {
    return null;
  }
}
