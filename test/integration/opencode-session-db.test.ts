/**
 * opencode's session database (src/opencode/session-db.ts): the CLI leaves it in WAL mode with
 * the WAL unfolded; checkpointWal folds the committed frames in, so the one file the session
 * store keeps is the whole database. Proved with the real binary's own SQLite (`opencode db`).
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { checkpointWal, dbPath, opencodeLayout } from "../../src/opencode/session-db.js";
import { resolveOpencodeBinary } from "../helpers/real-opencode.js";

const run = promisify(execFile);
const bin = resolveOpencodeBinary();
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-opencode-db-"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

let homes = 0;
function home(): string {
  const h = path.join(root, `home-${++homes}`);
  fs.mkdirSync(h);
  return h;
}

async function sql(h: string, query: string): Promise<unknown> {
  const { stdout } = await run(bin, ["db", query, "--format", "json"], {
    env: { PATH: process.env.PATH, HOME: h, OPENCODE_DISABLE_AUTOUPDATE: "1" },
  });
  return stdout.trim() ? JSON.parse(stdout) : null;
}

/** A HOME whose database holds table t with two rows, as the CLI leaves it (WAL unfolded). */
async function written(): Promise<string> {
  const h = home();
  await sql(h, "create table t(x text)");
  await sql(h, "insert into t values ('a')");
  await sql(h, "insert into t values ('b')");
  expect(fs.existsSync(`${dbPath(h)}-wal`)).toBe(true);
  return h;
}

/** A copy of a HOME's database files into a new HOME. */
function copy(from: string, files: string[]): string {
  const to = home();
  fs.mkdirSync(path.dirname(dbPath(to)), { recursive: true });
  for (const f of files) fs.copyFileSync(`${dbPath(from)}${f}`, `${dbPath(to)}${f}`);
  return to;
}

describe("opencode's database, folded into one file", { timeout: 120_000 }, () => {
  it("the WAL holds what the CLI wrote; folded in, the database file alone has it", async () => {
    const h = await written();
    // The database file alone lacks the last write (seen: the CLI folds a WAL in only when it
    // opens the database again): the WAL is not optional.
    const bare = copy(h, [""]);
    expect(await sql(bare, "select count(*) as n from t").catch(() => "no table")).not.toEqual([
      { n: 2 },
    ]);
    const folded = copy(h, ["", "-wal"]);
    expect(await checkpointWal(dbPath(folded))).toBeGreaterThan(0);
    expect(fs.existsSync(`${dbPath(folded)}-wal`)).toBe(false);
    expect(fs.existsSync(`${dbPath(folded)}-shm`)).toBe(false);
    const alone = copy(folded, [""]);
    expect(await sql(alone, "select count(*) as n from t")).toEqual([{ n: 2 }]);
    expect(await sql(alone, "pragma integrity_check")).toEqual([{ integrity_check: "ok" }]);
  });

  it("a torn tail (a writer killed mid-frame) is left out, the committed rest kept", async () => {
    const h = await written();
    const torn = copy(h, ["", "-wal"]);
    fs.appendFileSync(`${dbPath(torn)}-wal`, Buffer.alloc(5000, 0x5a));
    await checkpointWal(dbPath(torn));
    expect(await sql(torn, "select x from t order by x")).toEqual([{ x: "a" }, { x: "b" }]);
    expect(await sql(torn, "pragma integrity_check")).toEqual([{ integrity_check: "ok" }]);
  });

  it("a WAL that is not one (garbage, or a link) is never folded in", async () => {
    const h = await written();
    const junk = copy(h, [""]);
    fs.writeFileSync(`${dbPath(junk)}-wal`, Buffer.alloc(9000, 0x42));
    expect(await checkpointWal(dbPath(junk))).toBe(0);
    const linked = copy(h, [""]);
    fs.symlinkSync(`${dbPath(h)}-wal`, `${dbPath(linked)}-wal`);
    await expect(checkpointWal(dbPath(linked))).rejects.toThrow(/not a regular file/);
  });

  it("the layout finds the database only when it holds the session, and never through a link", async () => {
    const h = await written();
    await sql(h, "create table s(id text)");
    await sql(h, "insert into s values ('ses_0123456789abcdefghijABCDEF')");
    const found = await opencodeLayout.find(h, "ses_0123456789abcdefghijABCDEF");
    expect(found).toMatchObject({ file: dbPath(h), name: "opencode.db" });
    expect(await opencodeLayout.find(h, "ses_ZZZZZZZZZZZZZZZZZZZZZZZZZZ")).toBeNull();
    expect(await opencodeLayout.find(h, "../etc/passwd")).toBeNull();
    const linked = home();
    fs.mkdirSync(path.join(linked, ".local"));
    fs.symlinkSync(path.join(h, ".local", "share"), path.join(linked, ".local", "share"));
    expect(await opencodeLayout.find(linked, "ses_0123456789abcdefghijABCDEF")).toBeNull();
    expect(() => opencodeLayout.place(h, "/workspace", "../x", null)).toThrow();
  });
});
