import { spawn } from "node:child_process";
import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import type { IncomingMessage, ServerResponse } from "node:http";
import { execa } from "execa";

/**
 * The stand-in's git side: bare repositories on disk, written with `git fast-import` (one
 * process per commit, any number of files, nested paths), and served over smart HTTP by
 * Debian's `git http-backend` CGI, exactly as a real git client expects.
 */

/** Files of a commit: path → content; null deletes the path. */
/** Files to commit: content, null to delete, a symbolic link, or an executable file. */
export type FileMap = Record<
  string,
  string | Buffer | null | { symlink: string } | { executable: string }
>;

const GIT_HTTP_BACKEND_TIMEOUT_MS = 60_000;

/** Environment for the stand-in's own git processes: no user or system config. */
export function standInGitEnv(home: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: home,
    GIT_CONFIG_NOSYSTEM: "1",
    LC_ALL: "C",
  };
}

export async function initBareRepo(
  dir: string,
  defaultBranch: string,
  env: Record<string, string>,
) {
  await execa("git", ["init", "--quiet", "--bare", `--initial-branch=${defaultBranch}`, dir], {
    env,
    extendEnv: false,
  });
}

/**
 * The commit `ref` names, as `git rev-parse --verify --quiet <ref>^{commit}` gives it. A branch
 * (`refs/heads/<name>`) is read from the ref files when that is certain to give git's answer
 * (see {@link dwimRef}); anything else asks git.
 *
 * Assumption: a branch points at a commit. git refuses to write anything else under
 * refs/heads/, so the file's sha is what `^{commit}` peels to; the files are not checked for it.
 */
export async function refSha(
  bare: string,
  ref: string,
  env: Record<string, string>,
): Promise<string | undefined> {
  if (ref.startsWith("refs/heads/") && isSafeRefName(ref)) {
    const found = await dwimRef(bare, ref, env);
    // Found under the name itself (the first of git's rules). Found under a later rule
    // (refs/heads/refs/heads/<name>, refs/tags/refs/heads/<name>…) is git's to peel.
    if (found && found.rule === 0) return found.sha;
    // No ref under any rule. git would still try "<anything>-g<hex>" as `git describe` output
    // naming an abbreviated commit; such a name is left to git.
    if (found === null && !/-g[0-9a-fA-F]*$/.test(ref)) return undefined;
  }
  return refShaByGit(bare, ref, env);
}

/** {@link refSha} by asking git, always. */
export async function refShaByGit(
  bare: string,
  ref: string,
  env: Record<string, string>,
): Promise<string | undefined> {
  const r = await execa("git", ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], {
    cwd: bare,
    env,
    extendEnv: false,
    reject: false,
  });
  return r.exitCode === 0 ? r.stdout.trim() : undefined;
}

/*
 * Refs read straight from a bare repository's files: every git process costs the machine 30–50
 * ms under load, while a branch's sha is a small file (or a line of packed-refs) away. Only
 * git's "files" ref store is understood; whatever these readers do not recognise gives
 * `undefined`, and the caller then asks git, so an odd repository costs a process, never a
 * wrong answer.
 */

/**
 * A ref name turned into a file path: git-check-ref-format's rules on the characters
 * [A-Za-z0-9._/-], and no leading "-" (git would read that as an option).
 */
export function isSafeRefName(name: string): boolean {
  return (
    /^[A-Za-z0-9._/-]+$/.test(name) &&
    !name.startsWith("-") &&
    !name.startsWith("/") &&
    !name.endsWith("/") &&
    !name.endsWith(".") &&
    !name.includes("..") &&
    !name.includes("//") &&
    name.split("/").every((c) => !c.startsWith(".") && !c.endsWith(".lock"))
  );
}

/** Object id as git writes it in ref files (SHA-1, lower case); anything else is left to git. */
const REF_SHA = /^[0-9a-f]{40}$/;

/** Environment variables that move git's idea of where the refs are. */
const REF_LOCATION_ENV = ["GIT_DIR", "GIT_COMMON_DIR", "GIT_NAMESPACE"];

/**
 * packed-refs as a name → sha map when `bare` is a files-backend repository of its own (a
 * refs/ directory, no reftable/, no commondir, no environment pointing git elsewhere) whose
 * packed-refs (absent: empty) reads cleanly; undefined otherwise.
 */
async function packedRefs(
  bare: string,
  env: Record<string, string>,
): Promise<Map<string, string> | undefined> {
  if (REF_LOCATION_ENV.some((k) => k in env)) return undefined;
  const [refsDir, reftable, commondir, text] = await Promise.all([
    fs.lstat(path.join(bare, "refs")).then(
      (st) => st.isDirectory(),
      () => false,
    ),
    absent(path.join(bare, "reftable")),
    absent(path.join(bare, "commondir")),
    fs.readFile(path.join(bare, "packed-refs"), "utf8").then(
      (t) => t,
      (err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? "" : undefined),
    ),
  ]);
  if (!refsDir || !reftable || !commondir || text === undefined) return undefined;
  const refs = new Map<string, string>();
  for (const line of text.split("\n")) {
    // The `# pack-refs with: …` header, and `^<sha>`: the peeled value of the tag above.
    if (line === "" || line.startsWith("#") || line.startsWith("^")) continue;
    const m = /^([0-9a-f]{40}) (refs\/[^ ]+)$/.exec(line);
    if (!m || refs.has(m[2]!)) return undefined;
    refs.set(m[2]!, m[1]!);
  }
  return refs;
}

/** True when nothing is at `file`; false when something is or it cannot be told. */
async function absent(file: string): Promise<boolean> {
  return fs.lstat(file).then(
    () => false,
    (err: NodeJS.ErrnoException) => err.code === "ENOENT" || err.code === "ENOTDIR",
  );
}

/**
 * One ref under refs/, as git's files backend reads it: the loose file `<bare>/<name>` wins,
 * else its line in packed-refs. A sha; null when the ref does not exist (no loose file, or a
 * directory there, and no packed line); undefined when git must say (a symbolic ref, a symbolic
 * link, content git would not write, an unexpected error).
 */
async function fileRef(
  bare: string,
  name: string,
  packed: Map<string, string>,
): Promise<string | null | undefined> {
  let text: string;
  try {
    // O_NOFOLLOW: git reads a symlinked ref its own way; ELOOP sends that to git.
    text = await fs.readFile(path.join(bare, name), {
      encoding: "utf8",
      flag: fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW,
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR" || code === "EISDIR")
      return packed.get(name) ?? null;
    return undefined;
  }
  const sha = text.endsWith("\n") ? text.slice(0, -1) : text;
  return REF_SHA.test(sha) ? sha : undefined;
}

/**
 * git's rules for what a short name means, in git's order (the first that exists wins):
 * `<name>`, refs/<name>, refs/tags/<name>, refs/heads/<name>, refs/remotes/<name>,
 * refs/remotes/<name>/HEAD.
 */
const DWIM_RULES = [
  (n: string) => n,
  (n: string) => `refs/${n}`,
  (n: string) => `refs/tags/${n}`,
  (n: string) => `refs/heads/${n}`,
  (n: string) => `refs/remotes/${n}`,
  (n: string) => `refs/remotes/${n}/HEAD`,
];

/**
 * What git makes of `name` (safe, see {@link isSafeRefName}) as a ref, from the files: the
 * first of git's rules that names an existing ref, with its raw sha (not peeled) and the rule's
 * index; null when no rule names a ref; undefined when only git can tell. A candidate outside
 * refs/ (rule 0 for a name like `main`: `<bare>/main`, where git keeps HEAD, FETCH_HEAD…) is
 * git's whenever anything is there.
 */
async function dwimRef(
  bare: string,
  name: string,
  env: Record<string, string>,
): Promise<{ sha: string; rule: number } | null | undefined> {
  const packed = await packedRefs(bare, env);
  if (!packed) return undefined;
  const values = await Promise.all(
    DWIM_RULES.map((rule) => {
      const candidate = rule(name);
      if (candidate.startsWith("refs/")) return fileRef(bare, candidate, packed);
      return absent(path.join(bare, candidate)).then((gone) => (gone ? null : undefined));
    }),
  );
  for (const [rule, sha] of values.entries()) {
    if (sha === undefined) return undefined;
    if (sha !== null) return { sha, rule };
  }
  return null;
}

export async function updateRef(
  bare: string,
  ref: string,
  sha: string,
  env: Record<string, string>,
) {
  await execa("git", ["update-ref", ref, sha], { cwd: bare, env, extendEnv: false });
}

export async function deleteRef(bare: string, ref: string, env: Record<string, string>) {
  await execa("git", ["update-ref", "-d", ref], { cwd: bare, env, extendEnv: false });
}

/** Every ref and its commit (`refs/heads/main` → sha). */
export async function listRefs(
  bare: string,
  env: Record<string, string>,
): Promise<Map<string, string>> {
  const r = await execa("git", ["for-each-ref", "--format=%(refname) %(objectname)"], {
    cwd: bare,
    env,
    extendEnv: false,
  });
  return new Map(
    r.stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => l.split(" ") as [string, string]),
  );
}

/**
 * What GitHub checks when a push arrives, as a pre-receive hook (git http-backend runs it with
 * the environment the stand-in gives): no update of a protected branch (FAKE_PROTECTED, branch
 * names separated by spaces), no commit that touches .github/workflows/ unless the token
 * has the workflows permission (FAKE_WORKFLOWS=1), and on a branch a ruleset requires signed
 * commits on (FAKE_SIGNED_BRANCHES), no commit GitHub did not sign (FAKE_SIGNED_COMMITS). The
 * messages are GitHub's.
 */
const PRE_RECEIVE = `#!/bin/sh
zero=0000000000000000000000000000000000000000
while read -r old new ref; do
  for p in $FAKE_PROTECTED; do
    if [ "$ref" = "refs/heads/$p" ]; then
      echo "error: GH006: Protected branch update failed for $ref." >&2
      exit 1
    fi
  done
  if [ "$new" != "$zero" ]; then
    if [ "$old" = "$zero" ]; then range="$new --not --all"; else range="$old..$new"; fi
  fi
  for p in $FAKE_SIGNED_BRANCHES; do
    if [ "$ref" = "refs/heads/$p" ] && [ "$new" != "$zero" ]; then
      # shellcheck disable=SC2086
      for c in $(git rev-list $range); do
        case " $FAKE_SIGNED_COMMITS " in *" $c "*) ;; *)
          echo "error: GH013: Repository rule violations found for $ref." >&2
          echo "error: - Commits must have verified signatures." >&2
          echo "error:   Found 1 violation: $c" >&2
          exit 1 ;;
        esac
      done
    fi
  done
  if [ "$FAKE_WORKFLOWS" != 1 ] && [ "$new" != "$zero" ]; then
    # shellcheck disable=SC2086
    if git log --format= --name-only $range | grep -q '^\\.github/workflows/'; then
      echo "refusing to allow a GitHub App to create or update workflow without workflows permission" >&2
      exit 1
    fi
  fi
done
exit 0
`;

export async function installPreReceive(bare: string): Promise<void> {
  const hook = path.join(bare, "hooks", "pre-receive");
  await fs.mkdir(path.dirname(hook), { recursive: true });
  await fs.writeFile(hook, PRE_RECEIVE, { mode: 0o755 });
}

export interface CommitSpec {
  branch: string;
  files: FileMap;
  message: string;
  /** Start the branch from this ref or sha when it does not exist yet. */
  from?: string;
  author?: { name: string; email: string };
  when: Date;
}

/** Commit `files` on top of `branch` (or `from`, or as a root commit); returns the new sha. */
export async function commitFiles(
  bare: string,
  spec: CommitSpec,
  env: Record<string, string>,
): Promise<string> {
  const ref = `refs/heads/${spec.branch}`;
  const existing = await refSha(bare, ref, env);
  const parent = existing ? `${ref}^0` : spec.from;
  const who = spec.author ?? { name: "Fake GitHub", email: "fake@github.invalid" };
  const stamp = `${Math.floor(spec.when.getTime() / 1000)} +0000`;
  const chunks: Buffer[] = [];
  const line = (s: string) => chunks.push(Buffer.from(`${s}\n`));
  const data = (content: string | Buffer) => {
    const buf = Buffer.isBuffer(content) ? content : Buffer.from(content);
    line(`data ${buf.length}`);
    chunks.push(buf, Buffer.from("\n"));
  };
  line(`commit ${ref}`);
  line(`author ${who.name} <${who.email}> ${stamp}`);
  line(`committer ${who.name} <${who.email}> ${stamp}`);
  data(spec.message);
  if (parent) line(`from ${parent}`);
  for (const [file, content] of Object.entries(spec.files)) {
    if (content === null) line(`D ${quotePath(file)}`);
    else if (typeof content === "string" || Buffer.isBuffer(content)) {
      line(`M 100644 inline ${quotePath(file)}`);
      data(content);
    } else if ("symlink" in content) {
      line(`M 120000 inline ${quotePath(file)}`);
      data(content.symlink);
    } else {
      line(`M 100755 inline ${quotePath(file)}`);
      data(content.executable);
    }
  }
  line("");
  await execa("git", ["fast-import", "--quiet"], {
    cwd: bare,
    env,
    extendEnv: false,
    input: Buffer.concat(chunks),
  });
  const sha = await refSha(bare, ref, env);
  if (!sha) throw new Error(`fast-import did not create ${ref} in ${bare}`);
  return sha;
}

function quotePath(p: string): string {
  if (p.startsWith("/") || p.split("/").includes("..")) throw new Error(`bad path ${p}`);
  return /[\s"\\]/.test(p) ? `"${p.replace(/(["\\])/g, "\\$1")}"` : p;
}

export type TreeEntry = {
  type: "file" | "dir";
  name: string;
  path: string;
  sha: string;
  size: number;
};

/** What {@link readPath} answers. */
export type PathContent =
  | { type: "file"; sha: string; size: number; content: Buffer }
  | { type: "dir"; entries: TreeEntry[] }
  | undefined;

/**
 * Answers already read, by `<bare>\0<object sha>\0<path>`. An object never changes, so a hit is
 * exactly what git would say again. Oldest out first past the bound; large files are not kept.
 */
const pathCache = new Map<string, PathContent>();
const PATH_CACHE_MAX_ENTRIES = 2_000;
const PATH_CACHE_MAX_FILE_BYTES = 1 << 20;

/**
 * A file's bytes, a directory's entries, or undefined when `path` is absent at `ref` (or `ref`
 * names nothing git can list: then the root reads as an empty directory). `ref` is resolved to
 * an object first — from the ref files when certain, else by one `git rev-parse` — and the
 * answer for that object is kept, so asking again costs no git process. The caller gets its own
 * copy each time.
 */
export async function readPath(
  bare: string,
  ref: string,
  filePath: string,
  env: Record<string, string>,
): Promise<PathContent> {
  const clean = cleanPath(filePath);
  const sha = await treeishSha(bare, ref, env);
  // What a failing ls-tree gave: no entries, so an empty root and no path.
  if (sha === null) return clean === "" ? { type: "dir", entries: [] } : undefined;
  // Nothing to key on: git answers for the name itself, exactly as before.
  if (sha === undefined) return (await listPath(bare, ref, clean, env)).value;
  const key = `${bare}\0${sha}\0${clean}`;
  if (pathCache.has(key)) {
    const hit = pathCache.get(key);
    pathCache.delete(key);
    pathCache.set(key, hit);
    return copyContent(hit);
  }
  const { value, complete } = await listPath(bare, sha, clean, env);
  // Not kept when git failed (an object not in the repository yet may arrive with a push).
  if (complete && !(value?.type === "file" && value.size > PATH_CACHE_MAX_FILE_BYTES)) {
    pathCache.set(key, copyContent(value));
    while (pathCache.size > PATH_CACHE_MAX_ENTRIES) {
      const oldest = pathCache.keys().next().value;
      if (oldest === undefined) break;
      pathCache.delete(oldest);
    }
  }
  return value;
}

/** {@link readPath} by asking git, always (git resolves `ref` itself). */
export async function readPathByGit(
  bare: string,
  ref: string,
  filePath: string,
  env: Record<string, string>,
): Promise<PathContent> {
  return (await listPath(bare, ref, cleanPath(filePath), env)).value;
}

function cleanPath(filePath: string): string {
  return filePath.replace(/^\/+|\/+$/g, "");
}

function copyContent(value: PathContent): PathContent {
  if (value === undefined) return undefined;
  if (value.type === "dir") return { type: "dir", entries: value.entries.map((e) => ({ ...e })) };
  return { ...value, content: Buffer.from(value.content) };
}

/**
 * The object `ref` names, as `git ls-tree <ref>` would find it: a full sha as is; a safe name
 * from the ref files when git's rules are certain to pick that ref (see {@link dwimRef});
 * otherwise `git rev-parse --verify --quiet <ref>`. Not `<ref>^{commit}`: without a type to
 * peel to, rev-parse resolves the name exactly as ls-tree does (an ambiguous short sha fails for
 * both; `main:dir`, a tree or a tag is listed by both), and any object is immutable, so the key
 * is exact. Null when git is certain to find nothing: a safe name that is no ref under any of
 * git's rules and cannot be read as an abbreviated sha (all hex) or as `git describe` output
 * (`…-g<hex>`). Undefined when nothing resolves cleanly: the caller lets ls-tree read the name.
 */
async function treeishSha(
  bare: string,
  ref: string,
  env: Record<string, string>,
): Promise<string | null | undefined> {
  if (/^[0-9a-fA-F]{40}$/.test(ref)) return ref;
  if (isSafeRefName(ref)) {
    const found = await dwimRef(bare, ref, env);
    if (found) return found.sha;
    if (found === null && !/^[0-9a-fA-F]+$/.test(ref) && !/-g[0-9a-fA-F]*$/.test(ref)) return null;
  }
  // A leading "-" is an option to git; the old path gives git's answer for it.
  if (ref === "" || ref.startsWith("-")) return undefined;
  const r = await execa("git", ["rev-parse", "--verify", "--quiet", ref], {
    cwd: bare,
    env,
    extendEnv: false,
    reject: false,
  });
  const out = typeof r.stdout === "string" ? r.stdout.trim() : "";
  return r.exitCode === 0 && REF_SHA.test(out) ? out : undefined;
}

/**
 * `git ls-tree` (and `git cat-file`) at `treeish`; a failing ls-tree reads as no entries.
 * `complete` is false when one failed, so the answer says nothing lasting about the object.
 */
async function listPath(
  bare: string,
  treeish: string,
  clean: string,
  env: Record<string, string>,
): Promise<{ value: PathContent; complete: boolean }> {
  let complete = true;
  const lsTree = async (spec: string[]) => {
    const r = await execa("git", ["ls-tree", "-l", "-z", treeish, "--", ...spec], {
      cwd: bare,
      env,
      extendEnv: false,
      reject: false,
    });
    if (r.exitCode !== 0) {
      complete = false;
      return [];
    }
    return r.stdout
      .split("\0")
      .filter(Boolean)
      .map((rec) => {
        const [meta = "", p = ""] = rec.split("\t");
        const [, type = "", sha = "", size = "0"] = meta.trim().split(/\s+/);
        const entry: TreeEntry = {
          type: type === "tree" ? "dir" : "file",
          name: p.split("/").pop() ?? p,
          path: p,
          sha,
          size: type === "tree" ? 0 : Number(size),
        };
        return entry;
      });
  };
  const done = (value: PathContent) => ({ value, complete });
  if (clean === "") return done({ type: "dir", entries: await lsTree([]) });
  const [self] = await lsTree([clean]);
  if (!self || self.path !== clean) return done(undefined);
  if (self.type === "dir") return done({ type: "dir", entries: await lsTree([`${clean}/`]) });
  const blob = await execa("git", ["cat-file", "blob", self.sha], {
    cwd: bare,
    env,
    extendEnv: false,
    encoding: "buffer",
    stripFinalNewline: false,
  });
  return done({
    type: "file",
    sha: self.sha,
    size: self.size,
    content: Buffer.from(blob.stdout),
  });
}

export interface CgiRequest {
  /** Absolute directory holding <owner>/<name>.git. */
  projectRoot: string;
  /** e.g. /octo/widgets.git/info/refs */
  pathInfo: string;
  queryString: string;
  remoteUser: string;
  home: string;
  body: Buffer;
  /** More environment for git (and the hooks it runs). */
  env?: Record<string, string>;
}

/**
 * Run `git http-backend` for one request. The body is passed through as received: git sends
 * `Content-Encoding: gzip` for large POSTs and http-backend inflates it itself when told so
 * through HTTP_CONTENT_ENCODING. Returns the status it answered with.
 */
export function serveGitHttp(
  req: IncomingMessage,
  res: ServerResponse,
  cgi: CgiRequest,
  children: Set<ReturnType<typeof spawn>>,
  /**
   * Runs after the backend exited and before the response ends, so what it records (a push) is
   * there by the time the client's `git push` returns.
   */
  beforeEnd?: () => Promise<void>,
): Promise<number> {
  const header = (name: string) => {
    const v = req.headers[name];
    return Array.isArray(v) ? v.join(", ") : (v ?? "");
  };
  const env: Record<string, string> = {
    ...standInGitEnv(cgi.home),
    GIT_PROJECT_ROOT: cgi.projectRoot,
    GIT_HTTP_EXPORT_ALL: "1",
    GATEWAY_INTERFACE: "CGI/1.1",
    SERVER_PROTOCOL: `HTTP/${req.httpVersion}`,
    REQUEST_METHOD: req.method ?? "GET",
    PATH_INFO: cgi.pathInfo,
    QUERY_STRING: cgi.queryString,
    CONTENT_TYPE: header("content-type"),
    REMOTE_USER: cgi.remoteUser,
    REMOTE_ADDR: req.socket.remoteAddress ?? "127.0.0.1",
    HTTP_CONTENT_ENCODING: header("content-encoding"),
    HTTP_GIT_PROTOCOL: header("git-protocol"),
    HTTP_USER_AGENT: header("user-agent"),
    ...cgi.env,
  };
  if (req.method === "POST") env.CONTENT_LENGTH = String(cgi.body.length);

  return new Promise((resolve) => {
    const child = spawn("git", ["http-backend"], { env, stdio: ["pipe", "pipe", "pipe"] });
    children.add(child);
    const timer = setTimeout(() => child.kill("SIGKILL"), GIT_HTTP_BACKEND_TIMEOUT_MS);
    let head = Buffer.alloc(0);
    let headersSent = false;
    let status = 200;
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdout.on("data", (chunk: Buffer) => {
      if (headersSent) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const text = head.toString("latin1");
      const crlf = text.indexOf("\r\n\r\n");
      const lf = text.indexOf("\n\n");
      const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf + 4 : lf >= 0 ? lf + 2 : -1;
      if (end < 0) return;
      const headers: Record<string, string> = {};
      for (const raw of text.slice(0, end).split(/\r?\n/)) {
        const i = raw.indexOf(":");
        if (i <= 0) continue;
        const name = raw.slice(0, i).trim();
        const value = raw.slice(i + 1).trim();
        if (name.toLowerCase() === "status") status = Number.parseInt(value, 10) || 500;
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      headersSent = true;
      res.write(head.subarray(end));
    });
    child.on("error", (err) => {
      stderr += String(err);
    });
    child.on("close", () => {
      clearTimeout(timer);
      children.delete(child);
      if (!headersSent) {
        status = 500;
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(`git http-backend failed: ${stderr}`);
        resolve(status);
        return;
      }
      void (beforeEnd ?? (async () => {}))()
        .catch((err: unknown) => console.error("fake GitHub: after the git backend:", err))
        .finally(() => {
          res.end();
          resolve(status);
        });
    });
    child.stdin.on("error", () => undefined);
    child.stdin.end(cgi.body);
  });
}

/** One file of a pull request's diff, as GET /pulls/{n}/files describes it. */
export interface DiffFile {
  filename: string;
  previousFilename?: string;
  status: "added" | "removed" | "modified" | "renamed";
  additions: number;
  deletions: number;
  /** The hunks (from the first `@@`); absent for a binary file. */
  patch?: string;
  /** The file's blob at the head (the base's for a removed file). */
  sha: string;
}

/**
 * A pull request's diff as GitHub computes it: from the merge base of base and head to head
 * (`base...head`), three lines of context, renames found.
 */
export async function diffFiles(
  bare: string,
  base: string,
  head: string,
  env: Record<string, string>,
): Promise<DiffFile[]> {
  const { stdout } = await execa(
    "git",
    ["-C", bare, "diff", "--no-color", "--no-ext-diff", "-M", "--full-index", `${base}...${head}`],
    { env, extendEnv: false, stripFinalNewline: false },
  );
  const files: DiffFile[] = [];
  for (const chunk of stdout.split(/^(?=diff --git )/m)) {
    if (!chunk.startsWith("diff --git ")) continue;
    const lines = chunk.replace(/\n$/, "").split("\n");
    const at = lines.findIndex((l) => l.startsWith("@@"));
    const header = at < 0 ? lines : lines.slice(0, at);
    const body = at < 0 ? [] : lines.slice(at);
    const field = (p: string) => header.find((l) => l.startsWith(p))?.slice(p.length);
    const m = /^diff --git a\/(.+) b\/(.+)$/.exec(lines[0] ?? "");
    const from = field("rename from ") ?? field("--- a/") ?? m?.[1] ?? "";
    const to = field("rename to ") ?? field("+++ b/") ?? m?.[2] ?? "";
    const index = /^([0-9a-f]+)\.\.([0-9a-f]+)/.exec(field("index ") ?? "");
    const status: DiffFile["status"] = header.some((l) => l.startsWith("new file mode"))
      ? "added"
      : header.some((l) => l.startsWith("deleted file mode"))
        ? "removed"
        : field("rename from ")
          ? "renamed"
          : "modified";
    files.push({
      filename: status === "removed" ? from : to,
      ...(status === "renamed" ? { previousFilename: from } : {}),
      status,
      additions: body.filter((l) => l.startsWith("+")).length,
      deletions: body.filter((l) => l.startsWith("-")).length,
      ...(body.length ? { patch: body.join("\n") } : {}),
      sha: (status === "removed" ? index?.[1] : index?.[2]) ?? "0".repeat(40),
    });
  }
  return files;
}
