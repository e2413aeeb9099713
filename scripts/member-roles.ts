// Each operation's `x-role` — the least role a member's API token needs — stated in its
// description as well, from the extension itself, so that the docs and the machine-readable
// value never disagree.

type Node = { [key: string]: any };

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

const SENTENCES: Record<string, string> = {
  viewer: 'Role: any member of the team (`viewer`, `editor` or `admin`), with any API token.',
  editor: 'Role: `editor` or `admin`, with a token that is not read-only (otherwise 403).',
  admin: 'Role: `admin`, with a token that is not read-only (otherwise 403).',
};

/** Appends the role sentence to the description of every operation that states `x-role`. */
export function withRoleSentences(document: Node): Node {
  for (const item of Object.values<Node>(document.paths)) {
    for (const method of METHODS.filter((m) => item[m]?.['x-role'])) {
      const operation = item[method];
      const sentence = SENTENCES[operation['x-role']];
      if (!sentence) throw new Error(`${operation.operationId}: unknown x-role '${operation['x-role']}'`);
      operation.description = `${operation.description ?? ''}\n\n${sentence}`.trim();
    }
  }
  return document;
}
