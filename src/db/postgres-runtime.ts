import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Logger } from "../log.js";
import { processState } from "./data-dir-lock.js";
import type { PostgresBinaries } from "./postgres-binaries.js";
import { runToEnd, type RunAs } from "./postgres-process.js";

/**
 * Who runs the embedded PostgreSQL, and from where.
 *
 * As an ordinary user, Tether runs the package's binaries in place, as itself.
 *
 * As root it cannot: PostgreSQL refuses to run as root. It runs as the system user `postgres`
 * (made with useradd when missing), and that user must reach the binaries and the cluster
 * although both may sit under a directory only root may enter (a checkout in /root, or under
 * `mktemp -d`). Nothing of the user's is opened up for it (no chmod, no ACL):
 * - the binaries are hard-linked (copied across file systems) into a directory of their own under
 *   the temp directory, root's and readable by the `postgres` group only, removed on stop (and,
 *   after a crash, by the next start once no process runs from it);
 * - the cluster directory becomes the `postgres` user's (PostgreSQL insists on owning it), and
 *   the server reaches it through its working directory: the child changes into the cluster as
 *   root, before it drops to `postgres` (libuv's order), and is given `-D /proc/self/cwd`, which
 *   names the working directory without walking the path above it.
 *
 * Running PostgreSQL in a user namespace instead (unshare or bubblewrap mapping a non-root uid to
 * root) needs no user, no copy and no chown, but was measured and rejected: Docker's default
 * seccomp profile refuses the namespace to root in a container (CI runs in one), and the server
 * would hold root's rights over every root-owned file (`COPY … TO '/etc/passwd'` from its
 * superuser), where the `postgres` user holds only its own.
 */

/** The system user the embedded PostgreSQL runs as when Tether runs as root. */
export const DB_USER = "postgres";

/** A reason the embedded PostgreSQL cannot run here, in one line that says what to do. */
export class EmbeddedPostgresError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EmbeddedPostgresError";
  }
}

const WAYS_OUT = "run Tether as an ordinary user, or set DATABASE_URL to a PostgreSQL server";

export interface PostgresRuntime {
  initdb: string;
  postgres: string;
  /** Who the children run as; unset: as this process. */
  runAs?: RunAs & { name: string };
  /** The data directory as the children are told it; they always start in the cluster directory. */
  dataArg: string;
  /** Run `fn` with a file holding `content` that the children can read and nobody else can. */
  withPrivateFile<T>(content: string, fn: (file: string) => Promise<T>): Promise<T>;
  /** Remove what was set up for the server. Idempotent. */
  dispose(): Promise<void>;
}

export interface RuntimeOptions {
  /** Where runtime directories go; default os.tmpdir(). */
  tmpDir?: string;
  log?: Pick<Logger, "info" | "warn" | "debug">;
}

const PREFIX = "tether-pg-";

export async function preparePostgresRuntime(
  binaries: PostgresBinaries,
  dataDir: string,
  opts: RuntimeOptions = {},
): Promise<PostgresRuntime> {
  const tmp = opts.tmpDir ?? os.tmpdir();
  await sweepStaleRuntimes(tmp, opts.log);
  if (process.getuid?.() !== 0) return ownRuntime(binaries, dataDir, tmp);

  const user = await databaseUser(opts.log);
  const dir = await fs.mkdtemp(path.join(tmp, `${PREFIX}${process.pid}-`));
  let disposed = false;
  const dispose = async () => {
    if (disposed) return;
    disposed = true;
    await fs.rm(dir, { recursive: true, force: true });
  };
  try {
    try {
      await fs.chown(dir, 0, user.gid);
      await fs.chmod(dir, 0o750);
      await placeTree(binaries.root, dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? String(err);
      throw new EmbeddedPostgresError(
        `The embedded PostgreSQL cannot start: Tether runs as root, so it runs PostgreSQL as the user "${user.name}", ` +
          `and could not put the binaries in ${dir} for it (${code}; a container whose root cannot give files away?). ` +
          `Set TMPDIR to another directory, ${WAYS_OUT}.`,
      );
    }
    const inside = (p: string) => path.join(dir, path.relative(binaries.root, p));
    const runtime: PostgresRuntime = {
      initdb: inside(binaries.initdb),
      postgres: inside(binaries.postgres),
      runAs: user,
      dataArg: existsSync("/proc/self/cwd") ? "/proc/self/cwd" : dataDir,
      async withPrivateFile(content, fn) {
        const file = path.join(dir, `private-${process.pid}-${Date.now()}`);
        await fs.writeFile(file, content, { mode: 0o600, flag: "wx" });
        try {
          await fs.chown(file, user.uid, user.gid);
          return await fn(file);
        } finally {
          await fs.rm(file, { force: true });
        }
      },
      dispose,
    };
    await probe(runtime, user, dir);
    await handOver(dataDir, user, opts.log);
    return runtime;
  } catch (err) {
    await dispose();
    throw err;
  }
}

function ownRuntime(binaries: PostgresBinaries, dataDir: string, tmp: string): PostgresRuntime {
  return {
    initdb: binaries.initdb,
    postgres: binaries.postgres,
    dataArg: dataDir,
    async withPrivateFile(content, fn) {
      const dir = await fs.mkdtemp(path.join(tmp, `${PREFIX}${process.pid}-`));
      try {
        const file = path.join(dir, "private");
        await fs.writeFile(file, content, { mode: 0o600, flag: "wx" });
        return await fn(file);
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    },
    async dispose() {},
  };
}

const run = promisify(execFile);

async function lookup(db: "passwd" | "group", name: string): Promise<string[] | undefined> {
  try {
    const { stdout } = await run("getent", [db, name]);
    return stdout.trim().split(":");
  } catch {
    return undefined;
  }
}

async function findUser(): Promise<(RunAs & { name: string }) | undefined> {
  const entry = await lookup("passwd", DB_USER);
  const uid = Number(entry?.[2]);
  const gid = Number(entry?.[3]);
  return Number.isInteger(uid) && Number.isInteger(gid) && uid > 0
    ? { name: DB_USER, uid, gid }
    : undefined;
}

async function databaseUser(log: RuntimeOptions["log"]): Promise<RunAs & { name: string }> {
  const found = await findUser();
  if (found) return found;
  const group = (await lookup("group", DB_USER)) ? ["--gid", DB_USER] : ["--user-group"];
  let why = "";
  try {
    await run("useradd", [
      "--system",
      ...group,
      "--no-create-home",
      "--home-dir",
      "/nonexistent",
      "--shell",
      "/usr/sbin/nologin",
      "--comment",
      "PostgreSQL, embedded in Tether",
      DB_USER,
    ]);
  } catch (err) {
    // Exit 9: another process made it meanwhile; the lookup below finds it.
    why = String((err as { stderr?: string }).stderr || (err as Error).message).trim();
  }
  const made = await findUser();
  if (made) {
    if (!why)
      log?.info(
        { user: DB_USER, uid: made.uid },
        "made the system user the embedded PostgreSQL runs as (PostgreSQL refuses to run as root)",
      );
    return made;
  }
  throw new EmbeddedPostgresError(
    `The embedded PostgreSQL cannot start: Tether runs as root, PostgreSQL refuses to, and the system user ` +
      `"${DB_USER}" it would run as is missing and could not be made (useradd: ${why || "no such user afterwards"}). ` +
      `Create it (useradd --system --user-group ${DB_USER}), ${WAYS_OUT}.`,
  );
}

/** Hard-link (copy across file systems) the build's files into `dst`; headers and static libraries stay behind. */
async function placeTree(src: string, dst: string): Promise<void> {
  const files: { rel: string; link: boolean }[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const e of await fs.readdir(path.join(src, rel), { withFileTypes: true })) {
      const r = path.join(rel, e.name);
      if (e.isDirectory()) {
        if (e.name === "include" || e.name === "pkgconfig") continue;
        await fs.mkdir(path.join(dst, r));
        await walk(r);
      } else if (e.isSymbolicLink()) files.push({ rel: r, link: true });
      else if (!e.name.endsWith(".a")) files.push({ rel: r, link: false });
    }
  };
  await walk("");
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const { rel, link } = files[next++]!;
      const from = path.join(src, rel);
      const to = path.join(dst, rel);
      if (link) await fs.symlink(await fs.readlink(from), to);
      else
        await fs.link(from, to).catch(async (err: NodeJS.ErrnoException) => {
          if (!["EXDEV", "EPERM", "EMLINK", "ENOTSUP"].includes(err.code ?? "")) throw err;
          await fs.copyFile(from, to, fs.constants.COPYFILE_FICLONE);
        });
    }
  };
  // Mostly small files (time zones, extension scripts): the thread pool does them side by side.
  await Promise.all(Array.from({ length: 16 }, worker));
}

/** Fail now, in words, if the user cannot run the binaries where they were put. */
async function probe(runtime: PostgresRuntime, user: RunAs & { name: string }, dir: string) {
  const res = await runToEnd({
    file: runtime.postgres,
    args: ["--version"],
    cwd: "/",
    runAs: user,
  });
  if (res.code === 0) return;
  const closed = await firstClosedDirectory(dir, user);
  const why = closed
    ? `${closed.dir} (mode 0${(closed.mode & 0o777).toString(8)}, owner uid ${closed.uid}) is closed to it`
    : res.spawnError
      ? `${res.spawnError.code ?? res.spawnError.message}; is ${dir} on a file system mounted noexec?`
      : res.output || `exit code ${res.code}`;
  throw new EmbeddedPostgresError(
    `The embedded PostgreSQL cannot start: Tether runs as root, so it runs PostgreSQL as the user "${user.name}", ` +
      `which cannot run it from ${dir}: ${why}. Set TMPDIR to a directory every user may enter (such as /tmp), ${WAYS_OUT}.`,
  );
}

export interface DirStat {
  uid: number;
  gid: number;
  mode: number;
}

/** Whether a user with only these ids may pass through a directory (supplementary groups and ACLs aside). */
export function canSearch(st: DirStat, who: RunAs): boolean {
  if (st.uid === who.uid) return (st.mode & 0o100) !== 0;
  if (st.gid === who.gid) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/** The first directory from / down to `target` that `who` may not pass through, if any. */
export async function firstClosedDirectory(
  target: string,
  who: RunAs,
): Promise<(DirStat & { dir: string }) | undefined> {
  const parts = path.resolve(target).split(path.sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const dir = path.sep + parts.slice(0, i).join(path.sep);
    const st = await fs.stat(dir).catch(() => undefined);
    if (st && !canSearch(st, who)) return { dir, uid: st.uid, gid: st.gid, mode: st.mode };
  }
  return undefined;
}

/** Make the cluster directory the database user's (PostgreSQL refuses one owned by another). */
async function handOver(
  dataDir: string,
  user: RunAs & { name: string },
  log: RuntimeOptions["log"],
): Promise<void> {
  try {
    const st = await fs.stat(dataDir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return undefined;
      throw err;
    });
    if (!st) {
      await fs.mkdir(dataDir, { mode: 0o700 });
      await fs.chown(dataDir, user.uid, user.gid);
      return;
    }
    if (st.uid === user.uid && st.gid === user.gid) return;
    log?.info(
      { dataDir, fromUid: st.uid, toUser: user.name },
      "handing the embedded PostgreSQL's files to the user it runs as",
    );
    await chownTree(dataDir, user.uid, user.gid);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new EmbeddedPostgresError(
      `The embedded PostgreSQL cannot start: Tether runs as root, so PostgreSQL runs as the user "${user.name}", ` +
        `and ${dataDir} could not be made that user's (${code}; a file system that keeps owners of its own, such as NFS ` +
        `or a rootless container's volume?). Put TETHER_DATA_DIR on a local file system, ${WAYS_OUT}.`,
    );
  }
}

async function chownTree(dir: string, uid: number, gid: number): Promise<void> {
  await fs.lchown(dir, uid, gid);
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) await chownTree(p, uid, gid);
    else await fs.lchown(p, uid, gid);
  }
}

/**
 * Remove runtime directories that a killed process left: its pid is gone and no process runs
 * a program from it (an orphaned server still does until the next start on its cluster stops it).
 */
async function sweepStaleRuntimes(tmp: string, log: RuntimeOptions["log"]): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(tmp);
  } catch {
    return;
  }
  const stale = names.filter((n) => {
    const m = /^tether-pg-(\d+)-/.exec(n);
    return m !== null && !processState(Number(m[1])).alive;
  });
  if (!stale.length) return;
  const inUse = await runningExecutables();
  for (const name of stale) {
    const dir = path.join(tmp, name);
    if (inUse.some((exe) => exe.startsWith(`${dir}/`))) continue;
    await fs.rm(dir, { recursive: true, force: true }).then(
      () => log?.debug({ dir }, "removed the PostgreSQL runtime directory a killed process left"),
      () => {},
    );
  }
}

async function runningExecutables(): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await fs.readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const exe = await fs.readlink(`/proc/${entry}/exe`).catch(() => undefined);
    if (exe) out.push(exe);
  }
  return out;
}
