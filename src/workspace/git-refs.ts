import fs from "node:fs/promises";
import path from "node:path";

/**
 * Refs read straight from a checkout's .git directory. On a turn's hot path every git process
 * costs 5–10 ms of start-up, while HEAD, origin/HEAD and a branch's commit are a small file
 * (or a line of packed-refs) away.
 *
 * Only git's "files" ref store is understood. Anything else reads as `undefined` ("ask git"):
 * a reftable repository, a file that is neither a sha nor `ref: <name>`, a name that is not a
 * well-formed ref, a symref chain too long, an unexpected read error. Callers then run git, so
 * the answer never depends on this reader being right about an odd repository.
 */

/** What one ref holds: a commit, a symbolic ref to another name, or nothing. */
export type RefValue =
  { kind: "sha"; sha: string } | { kind: "symref"; target: string } | { kind: "missing" };

/** Where a chain of symrefs ends: the last name, and its object (null when that ref is unborn). */
export interface ResolvedRef {
  ref: string;
  sha: string | null;
}

/** SHA-1 or SHA-256 object id, as git writes it (lower case). */
const OID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/u;

/** Symref hops followed before giving up (git itself stops at 5). */
const MAX_SYMREF_DEPTH = 5;

export function isObjectId(value: string): boolean {
  return OID.test(value);
}

/** Git's rules for a branch name (git-check-ref-format), so a PR head ref is safe to check out. */
export function isValidBranchName(name: string): boolean {
  if (name === "" || name === "@" || name.startsWith("-") || name.startsWith("/")) return false;
  if (name.endsWith("/") || name.endsWith(".") || name.includes("//") || name.includes(".."))
    return false;
  if (name.includes("@{") || /[~^:?*[\\]/u.test(name)) return false;
  if ([...name].some((ch) => ch <= " " || ch === "\x7f")) return false;
  return name.split("/").every((c) => !c.startsWith(".") && !c.endsWith(".lock"));
}

/** "HEAD" or a well-formed name under refs/: the only names this reader turns into paths. */
function isReadableRefName(name: string): boolean {
  return name === "HEAD" || (name.startsWith("refs/") && isValidBranchName(name));
}

/** A loose ref file's content: `<sha>\n` or `ref: <name>\n`; undefined for anything else. */
export function parseLooseRef(content: string): RefValue | undefined {
  const text = content.endsWith("\n") ? content.slice(0, -1) : content;
  if (OID.test(text)) return { kind: "sha", sha: text };
  if (text.startsWith("ref: ")) {
    const target = text.slice("ref: ".length);
    return isReadableRefName(target) && target !== "HEAD" ? { kind: "symref", target } : undefined;
  }
  return undefined;
}

/**
 * packed-refs: an optional `# pack-refs with: …` header, then `<sha> <name>` lines, each
 * optionally followed by `^<peeled sha>` (annotated tags). Undefined when a line is none of these.
 */
export function parsePackedRefs(content: string): Map<string, string> | undefined {
  const refs = new Map<string, string>();
  for (const line of content.split("\n")) {
    if (line === "" || line.startsWith("#") || line.startsWith("^")) continue;
    const space = line.indexOf(" ");
    const sha = line.slice(0, space);
    const name = line.slice(space + 1);
    if (space < 0 || !OID.test(sha) || !name.startsWith("refs/")) return undefined;
    refs.set(name, sha);
  }
  return refs;
}

/**
 * A view of one .git directory's refs. packed-refs is read once per view, so take a new view
 * after any git command that may have changed refs.
 */
export interface RefFiles {
  /** The ref's own value, without following a symref; undefined: ask git. */
  read(name: string): Promise<RefValue | undefined>;
  /** Follows symrefs to the end; undefined: ask git. */
  resolve(name: string): Promise<ResolvedRef | undefined>;
}

export function refFiles(gitDir: string): RefFiles {
  let packed: Promise<Map<string, string> | undefined> | undefined;
  const loadPacked = () =>
    (packed ??= (async () => {
      // A reftable repository keeps a stub HEAD and no real loose refs: trust none of the files.
      const reftable = await fs.stat(path.join(gitDir, "reftable")).then(
        () => true,
        (err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? false : undefined),
      );
      if (reftable !== false) return undefined;
      const text = await readText(path.join(gitDir, "packed-refs"));
      if (text === undefined) return undefined;
      return text === null ? new Map<string, string>() : parsePackedRefs(text);
    })());

  const read: RefFiles["read"] = async (name) => {
    if (!isReadableRefName(name)) return undefined;
    const [loose, pack] = await Promise.all([readText(path.join(gitDir, name)), loadPacked()]);
    if (loose === undefined || pack === undefined) return undefined;
    if (loose !== null) return parseLooseRef(loose);
    const sha = pack.get(name);
    return sha === undefined ? { kind: "missing" } : { kind: "sha", sha };
  };

  const resolve: RefFiles["resolve"] = async (name) => {
    let current = name;
    for (let depth = 0; depth <= MAX_SYMREF_DEPTH; depth++) {
      const value = await read(current);
      if (value === undefined) return undefined;
      if (value.kind === "missing") return { ref: current, sha: null };
      if (value.kind === "sha") return { ref: current, sha: value.sha };
      current = value.target;
    }
    return undefined;
  };

  return { read, resolve };
}

/** A file's text; null when it does not exist (or is a directory of refs); undefined on other errors. */
async function readText(file: string): Promise<string | null | undefined> {
  try {
    return await fs.readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ENOENT" || code === "EISDIR" || code === "ENOTDIR" ? null : undefined;
  }
}
