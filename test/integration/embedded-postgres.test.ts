/**
 * The embedded PostgreSQL on real clusters: its password is random, kept 0600 beside the
 * cluster, reused on restart; a cluster made with the old fixed password moves to a random one
 * without losing data; secrets stay out of logs and out of the server's environment; nothing is
 * left in the temp directory once it stops. Run as root (as CI does), it runs as the `postgres`
 * user from a 0700 directory nobody else may enter.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { LEGACY_PASSWORD, scramVerifier } from "../../src/db/embedded-password.js";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../src/db/embedded.js";
import { canSearch } from "../../src/db/postgres-runtime.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const isRoot = process.getuid?.() === 0;
/** mkdtemp makes it 0700: as root, the postgres user cannot enter it. */
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tether-embedded-"));
const servers: EmbeddedPostgres[] = [];
let n = 0;

afterAll(async () => {
  for (const s of servers) await s.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const settings = { fsync: "off", synchronous_commit: "off", full_page_writes: "off" };

function recordingLog() {
  const lines: string[] = [];
  const rec =
    (level: string) =>
    (obj: unknown, msg?: string): void => {
      lines.push(`${level} ${typeof obj === "string" ? obj : JSON.stringify(obj)} ${msg ?? ""}`);
    };
  return {
    lines,
    log: { info: rec("info"), warn: rec("warn"), error: rec("error"), debug: rec("debug") },
  };
}

async function start(dataDir: string, log = recordingLog().log): Promise<EmbeddedPostgres> {
  const server = await startEmbeddedPostgres({ dataDir, settings, log });
  servers.push(server);
  return server;
}

async function stop(server: EmbeddedPostgres): Promise<void> {
  await server.stop();
  servers.splice(servers.indexOf(server), 1);
}

/** The SQLSTATE a login gets, or "ok". */
async function loginAs(port: number, password: string): Promise<string> {
  const c = new pg.Client({
    host: "127.0.0.1",
    port,
    user: "tether",
    password,
    database: "postgres",
  });
  try {
    await c.connect();
    return "ok";
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  } finally {
    await c.end().catch(() => {});
  }
}

/** Rows of the last statement, all run on one connection. */
async function query<T extends pg.QueryResultRow>(url: string, ...sql: string[]): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    let rows: T[] = [];
    for (const s of sql) rows = (await c.query<T>(s)).rows;
    return rows;
  } finally {
    await c.end();
  }
}

/** Runtime directories (binaries for the postgres user, initdb's password file) of this process. */
function runtimeDirs(): string[] {
  return fs.readdirSync(os.tmpdir()).filter((d) => d.startsWith(`tether-pg-${process.pid}-`));
}

function postmasterPid(dataDir: string): number {
  return Number(fs.readFileSync(path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
}

function freshDataDir(): string {
  return path.join(tmp, `d${++n}`, "postgres");
}

describe("the embedded PostgreSQL's password", () => {
  it("is random on a fresh cluster, kept 0600 beside it, and the old tether/tether login fails", async () => {
    const dataDir = freshDataDir();
    const { log, lines } = recordingLog();
    process.env.TETHER_TEST_CANARY_SECRET = "canary-secret-value-31337";
    let server: EmbeddedPostgres;
    try {
      server = await start(dataDir, log);
    } finally {
      delete process.env.TETHER_TEST_CANARY_SECRET;
    }
    const file = path.join(path.dirname(dataDir), "postgres.password");
    expect(server.passwordFile).toBe(file);
    const st = fs.statSync(file);
    expect(st.mode & 0o777).toBe(0o600);
    expect(st.uid).toBe(process.getuid!());
    const password = fs.readFileSync(file, "utf8").trim();
    expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(server.password).toBe(password);
    expect(new URL(server.url).password).toBe(password);

    expect(await loginAs(server.port, password)).toBe("ok");
    expect(await loginAs(server.port, LEGACY_PASSWORD)).toBe("28P01");
    // The server stores a verifier, never the password.
    const [role] = await query<{ rolpassword: string }>(
      server.url,
      "select rolpassword from pg_authid where rolname = 'tether'",
    );
    expect(role!.rolpassword).toMatch(/^SCRAM-SHA-256\$4096:/);
    expect(role!.rolpassword).not.toContain(password);

    // Secrets stay out of the log and out of the server's environment.
    expect(lines.join("\n")).not.toContain(password);
    expect(lines.join("\n")).toContain(file);
    const environ = fs.readFileSync(`/proc/${postmasterPid(dataDir)}/environ`, "utf8");
    expect(environ).not.toContain("canary-secret-value");
    expect(environ).not.toContain(password);

    if (isRoot) {
      // Run as postgres, although nobody but root may enter the directory above the cluster.
      expect(fs.statSync(tmp).mode & 0o777).toBe(0o700);
      const ps = fs.statSync(`/proc/${postmasterPid(dataDir)}`);
      expect(ps.uid).not.toBe(0);
      expect(fs.statSync(dataDir).uid).toBe(ps.uid);
      expect(runtimeDirs()).toHaveLength(1);
    }
    await stop(server);
    expect(runtimeDirs()).toEqual([]);
    expect(fs.statSync(tmp).mode & 0o777).toBe(0o700);
  });

  it("is reused on a restart, and the data is still there", async () => {
    const dataDir = freshDataDir();
    const first = await start(dataDir);
    await query(first.url, "create table kept (v text); insert into kept values ('before')");
    const password = first.password;
    await stop(first);

    const second = await start(dataDir);
    expect(second.password).toBe(password);
    expect(fs.readFileSync(second.passwordFile, "utf8").trim()).toBe(password);
    expect(await query(second.url, "select v from kept")).toEqual([{ v: "before" }]);
    expect(await loginAs(second.port, LEGACY_PASSWORD)).toBe("28P01");
    await stop(second);
  });

  it("moves a cluster made with the old fixed password to a random one, keeping its data", async () => {
    const dataDir = freshDataDir();
    // A cluster as Tether made them before: role tether with password tether, no password file.
    const old = await start(dataDir);
    await query(old.url, "create table kept (v text); insert into kept values ('from before')");
    const [legacy] = await query<{ rolpassword: string }>(
      old.url,
      `alter role tether password '${LEGACY_PASSWORD}'`,
      "select rolpassword from pg_authid where rolname = 'tether'",
    );
    await stop(old);
    fs.rmSync(old.passwordFile);

    // Our verifier is PostgreSQL's own: same salt and iterations, same result.
    const [, iter, salt] = /^SCRAM-SHA-256\$(\d+):([^$]+)\$/.exec(legacy!.rolpassword)!;
    expect(scramVerifier(LEGACY_PASSWORD, Buffer.from(salt!, "base64"), Number(iter))).toBe(
      legacy!.rolpassword,
    );

    const { log, lines } = recordingLog();
    const moved = await start(dataDir, log);
    expect(moved.password).not.toBe(LEGACY_PASSWORD);
    expect(fs.readFileSync(moved.passwordFile, "utf8").trim()).toBe(moved.password);
    expect(fs.statSync(moved.passwordFile).mode & 0o777).toBe(0o600);
    expect(await loginAs(moved.port, LEGACY_PASSWORD)).toBe("28P01");
    expect(await loginAs(moved.port, moved.password)).toBe("ok");
    expect(await query(moved.url, "select v from kept")).toEqual([{ v: "from before" }]);
    expect(lines.some((l) => l.includes("had the old fixed password"))).toBe(true);
    expect(lines.join("\n")).not.toContain(moved.password);
    await stop(moved);

    // And it stays moved.
    const again = await start(dataDir);
    expect(again.password).toBe(moved.password);
    await stop(again);
  });

  it("finishes a move cut short after the file was written, and names the file when neither password works", async () => {
    const dataDir = freshDataDir();
    const first = await start(dataDir);
    await query(first.url, `alter role tether password '${LEGACY_PASSWORD}'`);
    await stop(first);
    // The file holds the new password, the cluster still the old one (a crash between the two).
    const resumed = await start(dataDir);
    expect(resumed.password).toBe(first.password);
    expect(await loginAs(resumed.port, LEGACY_PASSWORD)).toBe("28P01");
    await query(resumed.url, "alter role tether password 'someone-else-set-this'");
    await stop(resumed);

    const err = await startEmbeddedPostgres({ dataDir, settings }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).toContain(`refused the password in ${first.passwordFile}`);
    expect(message).not.toContain(first.password);
    // It stopped its server and gave the directory back: the next start gets that far again.
    expect(fs.existsSync(path.join(dataDir, "postmaster.pid"))).toBe(false);
    expect(fs.existsSync(`${dataDir}.lock`)).toBe(false);
    expect(runtimeDirs()).toEqual([]);
  });

  it("makes a password file others could read private again", async () => {
    const dataDir = freshDataDir();
    const first = await start(dataDir);
    await stop(first);
    fs.chmodSync(first.passwordFile, 0o644);
    const { log, lines } = recordingLog();
    const second = await start(dataDir, log);
    expect(fs.statSync(second.passwordFile).mode & 0o777).toBe(0o600);
    expect(lines.some((l) => l.startsWith("warn") && l.includes("readable by others"))).toBe(true);
    await stop(second);
  });

  it.skipIf(!isRoot)(
    "as root, takes over a cluster another user owns (made before by root's own initdb, say)",
    async () => {
      const dataDir = freshDataDir();
      const first = await start(dataDir);
      await query(first.url, "create table kept (v text); insert into kept values ('x')");
      await stop(first);
      const chownAll = (p: string) => {
        fs.lchownSync(p, 0, 0);
        if (fs.lstatSync(p).isDirectory())
          for (const e of fs.readdirSync(p)) chownAll(path.join(p, e));
      };
      chownAll(dataDir);
      const { log, lines } = recordingLog();
      const second = await start(dataDir, log);
      expect(fs.statSync(dataDir).uid).not.toBe(0);
      expect(await query(second.url, "select v from kept")).toEqual([{ v: "x" }]);
      expect(lines.some((l) => l.includes("handing the embedded PostgreSQL's files"))).toBe(true);
      await stop(second);
    },
  );

  const nobody = { uid: 65534, gid: 65534 };
  /** The first directory above this checkout that `nobody` may not pass (a checkout in /root, say). */
  const closedToNobody = path
    .resolve(ROOT)
    .split(path.sep)
    .map((_, i, parts) => parts.slice(0, i + 1).join(path.sep) || path.sep)
    .find((dir) => !canSearch(fs.statSync(dir), nobody));
  it.skipIf(!isRoot || closedToNobody !== undefined)(
    `as an ordinary user (nobody), runs the server as that user with the cluster's real path (${
      !isRoot
        ? "skipped: not root, so the whole suite already takes this path"
        : closedToNobody
          ? `skipped: nobody cannot enter ${closedToNobody}, above this checkout`
          : "run as root, dropping to nobody"
    })`,
    () => {
      const home = fs.mkdtempSync(path.join(os.tmpdir(), "tether-nobody-"));
      fs.chownSync(home, nobody.uid, nobody.gid);
      try {
        const dataDir = path.join(home, "postgres");
        const out = execFileSync(
          process.execPath,
          ["--import", "tsx", "test/helpers/embedded-as-user.ts", dataDir],
          {
            cwd: ROOT,
            ...nobody,
            env: { PATH: process.env.PATH, HOME: home, TMPDIR: os.tmpdir() },
            encoding: "utf8",
            timeout: 60_000,
          },
        );
        expect(JSON.parse(out.trim().split("\n").at(-1)!)).toEqual({
          uid: nobody.uid,
          serverUid: nobody.uid,
          dataDirectory: dataDir,
          passwordMode: 0o600,
          leftInTmp: [],
        });
      } finally {
        fs.rmSync(home, { recursive: true, force: true });
      }
    },
    90_000,
  );
});
