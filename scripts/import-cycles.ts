// Fails when the project's TypeScript files import each other in a circle (type-only imports
// included: a circle of types is a circle of design). Part of `npm run check`.
//   tsx scripts/import-cycles.ts [folder…]   (default: domain server sdk scripts verify test)
// bench/ is not checked yet: it has two circles of its own (lib/options → phases/reads →
// lib/environment → lib/options, phases/layers ↔ phases/libraries).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

const root = resolve(import.meta.dirname, '..');

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mts)$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The project files a file imports or re-exports (relative specifiers only: packages cannot import us back). */
export function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .flatMap((specifier) => {
      const base = resolve(dirname(file), specifier.replace(/\.js$/, ''));
      const found = [`${base}.ts`, `${base}.mts`, join(base, 'index.ts')].find((candidate) => existsSync(candidate));
      return found ? [found] : [];
    });
}

/** Every circle of imports among the files, each once, as a path that returns to its start (Tarjan's strongly connected components, then one circle per component). */
export function importCycles(files: string[], importsOfFile: (file: string) => string[] = importsOf): string[][] {
  const edges = new Map(files.map((file) => [file, importsOfFile(file)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let counter = 0;
  const visit = (file: string) => {
    index.set(file, counter);
    low.set(file, counter++);
    stack.push(file);
    onStack.add(file);
    for (const target of edges.get(file) ?? []) {
      if (!edges.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) low.set(file, Math.min(low.get(file)!, index.get(target)!));
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1 || edges.get(file)!.includes(file)) components.push(component);
    }
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return components.map((component) => circleIn(component, edges));
}

/** One circle through a component's first file: a breadth-first path back to it. */
function circleIn(component: string[], edges: Map<string, string[]>): string[] {
  const members = new Set(component);
  const start = [...component].sort()[0]!;
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const target of edges.get(file)!) {
      if (!members.has(target)) continue;
      if (target === start) {
        const path = [start];
        for (let at = file; at !== start; at = previous.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!previous.has(target)) {
        previous.set(target, file);
        queue.push(target);
      }
    }
  }
  return [start, start];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const folders = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['domain', 'server', 'sdk', 'scripts', 'verify', 'test'];
  const files = folders.flatMap((folder) => sourceFiles(resolve(root, folder)));
  const cycles = importCycles(files);
  for (const cycle of cycles) console.error(`import cycle: ${cycle.map((file) => relative(root, file)).join(' → ')}`);
  if (cycles.length > 0) process.exit(1);
  console.log(`no import cycles among ${files.length} files`);
}
