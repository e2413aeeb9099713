// What the kit prints — a line per operation, then every violation — and the JUnit XML it writes
// for CI systems (one test case per operation). Nothing the deployment wrote reaches either unescaped.
import { operations } from './contract';
import type { Check, Session } from './session';

export interface Outcome {
  label: string;
  operationId: string;
  checks: Check[];
  failures: string[];
}

/**
 * What the deployment wrote (property names, header values, media types, error messages) as the
 * kit may print it: every control character — C0 with tab and line breaks, DEL, C1 — the Unicode
 * line and paragraph separators, bidirectional overrides and isolates, U+FEFF, U+FFFE, U+FFFF and
 * lone surrogates written as `\u001b`, visibly, so that an answer cannot move the cursor, set the
 * terminal's title, clear the screen or start a line of its own ("all operations conform"), and
 * the JUnit file holds only characters XML 1.0 allows. Then cut to 1 000 characters.
 */
export function visible(text: string): string {
  const escaped = text.replace(
    /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
    (character) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  if (escaped.length <= 1000) return escaped;
  // Cut before a surrogate pair rather than through it.
  const cut = /[\ud800-\udbff]/.test(escaped[999]!) ? 999 : 1000;
  return `${escaped.slice(0, cut)}… (${escaped.length} characters)`;
}

export function outcomes(session: Session): Outcome[] {
  return operations.map(({ label, operationId }) => {
    const checks = session.checks.get(label)!;
    const failures = checks.flatMap((check) => check.failures.map((failure) => visible(`${check.request} (${check.purpose}) → ${check.status || 'no answer'}: ${failure}`)));
    if (checks.length === 0) failures.push('not exercised: an earlier step failed');
    return { label, operationId, checks, failures };
  });
}

export function table(results: Outcome[]): string {
  const width = Math.max(...results.map((r) => r.label.length));
  const rows = results.map((r) => {
    const statuses = [...new Set(r.checks.map((c) => c.status))].sort().join(' ');
    const verdict = r.failures.length === 0 ? 'ok' : `FAIL (${r.failures.length})`;
    return `${r.label.padEnd(width)}  ${r.operationId.padEnd(28)}  ${String(r.checks.length).padStart(5)}  ${statuses.padEnd(15)}  ${verdict}`;
  });
  const header = `${'operation'.padEnd(width)}  ${'operationId'.padEnd(28)}  calls  ${'statuses'.padEnd(15)}  result`;
  const failures = results.flatMap((r) => r.failures.map((failure) => `FAIL ${r.label} (${r.operationId}): ${failure}`));
  return [header, ...rows, '', ...failures].join('\n');
}

const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export function junit(results: Outcome[], baseUrl: string, seconds: number): string {
  const failed = results.filter((r) => r.failures.length > 0).length;
  const cases = results.map((r) => {
    const name = xml(`${r.label} (${r.operationId})`);
    if (r.failures.length === 0) return `    <testcase classname="contract" name="${name}"/>`;
    return `    <testcase classname="contract" name="${name}">\n      <failure message="${xml(r.failures[0]!)}">${xml(r.failures.join('\n'))}</failure>\n    </testcase>`;
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="contract conformance" tests="${results.length}" failures="${failed}" time="${seconds.toFixed(3)}">`,
    `  <testsuite name="${xml(visible(baseUrl))}" tests="${results.length}" failures="${failed}" errors="0" time="${seconds.toFixed(3)}">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}
