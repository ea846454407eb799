import { spawn } from "node:child_process";
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

export async function refSha(
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
 * names separated by spaces), and no commit that touches .github/workflows/ unless the token
 * has the workflows permission (FAKE_WORKFLOWS=1). The messages are GitHub's.
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
  if [ "$FAKE_WORKFLOWS" != 1 ] && [ "$new" != "$zero" ]; then
    if [ "$old" = "$zero" ]; then range="$new --not --all"; else range="$old..$new"; fi
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

/** A file's bytes, a directory's entries, or undefined when `path` is absent at `ref`. */
export async function readPath(
  bare: string,
  ref: string,
  filePath: string,
  env: Record<string, string>,
): Promise<
  | { type: "file"; sha: string; size: number; content: Buffer }
  | { type: "dir"; entries: TreeEntry[] }
  | undefined
> {
  const clean = filePath.replace(/^\/+|\/+$/g, "");
  const lsTree = async (spec: string[]) => {
    const r = await execa("git", ["ls-tree", "-l", "-z", ref, "--", ...spec], {
      cwd: bare,
      env,
      extendEnv: false,
      reject: false,
    });
    if (r.exitCode !== 0) return [];
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
  if (clean === "") return { type: "dir", entries: await lsTree([]) };
  const [self] = await lsTree([clean]);
  if (!self || self.path !== clean) return undefined;
  if (self.type === "dir") return { type: "dir", entries: await lsTree([`${clean}/`]) };
  const blob = await execa("git", ["cat-file", "blob", self.sha], {
    cwd: bare,
    env,
    extendEnv: false,
    encoding: "buffer",
    stripFinalNewline: false,
  });
  return { type: "file", sha: self.sha, size: self.size, content: Buffer.from(blob.stdout) };
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
