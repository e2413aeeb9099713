// The "Removed operations" section of the bundled document's description, made from its root
// extension `x-removed-operations` so that the docs and the machine-readable list never disagree.

interface RemovedOperation {
  method: string;
  path: string;
  removed_in: string;
  replaced_by: { method: string; path: string; how: string } | null;
  reason: string;
}

type Node = { [key: string]: any };

function row(removed: RemovedOperation): string {
  const instead = removed.replaced_by ? `\`${removed.replaced_by.method} ${removed.replaced_by.path}\`: ${removed.replaced_by.how}` : 'Nothing.';
  return `| \`${removed.method} ${removed.path}\` | ${removed.removed_in} | ${instead} | ${removed.reason} |`;
}

function removedOperationsSection(removed: RemovedOperation[]): string {
  return [
    '## Removed operations',
    '',
    'Operations of the earlier interface that this contract no longer has. None of them is in this',
    'document; the server answers each 404 (405 where the path has other methods). The same list is',
    'machine-readable in the document\'s root extension `x-removed-operations` — each entry with',
    '`method`, `path`, `removed_in` (the contract version), `replaced_by` (`method`, `path` and',
    '`how`, or null) and `reason` — for client generators and linters that warn about calls to them.',
    '',
    '| operation | removed in | use instead | why |',
    '|---|---|---|---|',
    ...removed.map(row),
  ].join('\n');
}

/** Appends the section to the description (the changelog, added by the docs, stays last). */
export function withRemovedOperations(document: Node): Node {
  const removed: RemovedOperation[] = document['x-removed-operations'] ?? [];
  document.info.description = `${document.info.description ?? ''}\n\n${removedOperationsSection(removed)}`;
  return document;
}
