/**
 * `tether transcript <session-id-prefix>` (src/sessions/transcript-command.ts, #28): how an
 * operator reads a stored transcript, a broken session's above all. Real Postgres; the last test
 * runs the entry point (src/main.ts) as a process, as an operator would.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { processState } from "../../src/db/data-dir-lock.js";
import { printTranscript, runningEmbeddedUrl } from "../../src/sessions/transcript-command.js";
import { upsertSession } from "../../src/sql/sessions.js";
import { chainDigest, EMPTY_DIGEST, writeTranscript } from "../../src/sql/transcripts.js";
import { createTestDatabase } from "../helpers/db.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
const ROOT = path.resolve(import.meta.dirname, "../..");
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill("SIGKILL");
});

const LINES = [
  '{"type":"user","message":{"role":"user","content":"hello"}}\n',
  '{"type":"assistant","message":{"role":"assistant","content":"hi"}}\n',
];

async function session(id: string, o: { stored?: boolean; state?: string } = {}) {
  await upsertSession(db.pool, {
    repoId: repoIdOf("octo/widgets"),
    repo: "octo/widgets",
    issueNumber: 7,
    agent: "tether",
    sessionId: id,
    runtimeId: "rt",
    workDir: "/w",
    model: null,
    historyEpoch: 0,
  });
  if (o.state)
    await db.pool.query(
      "UPDATE sessions SET state = $2, state_reason = 'context overflow', state_changed_at = now() WHERE session_id = $1",
      [id, o.state],
    );
  if (o.stored === false) return;
  const raw = LINES.map((l) => Buffer.from(l));
  let offset = 0;
  const chunks = raw.map((b) => {
    const c = { rawOffset: offset, rawBytes: b.length, data: zlib.gzipSync(b) };
    offset += b.length;
    return c;
  });
  const ok = await writeTranscript(
    db.pool,
    { repoId: repoIdOf("octo/widgets"), repo: "octo/widgets", issueNumber: 7, agent: "tether" },
    id,
    null,
    { kind: "replace", chunks },
    { rawBytes: offset, sha256: chainDigest(EMPTY_DIGEST, raw), cliVersion: "2.1.197" },
  );
  expect(ok).toBe(true);
}

function sink() {
  const parts: Buffer[] = [];
  return {
    write: (c: string | Buffer) => parts.push(Buffer.from(c)),
    text: () => Buffer.concat(parts).toString("utf8"),
  };
}

describe("printTranscript", () => {
  it("writes a poisoned session's stored transcript, found by a prefix of its id", async () => {
    await session("5e1f0a2b-poisoned-one", { state: "poisoned" });
    const out = sink();
    const err = sink();
    expect(await printTranscript(db.pool, "5e1f0a2b", out, err)).toBe(0);
    expect(out.text()).toBe(LINES.join(""));
    expect(err.text()).toContain("5e1f0a2b-poisoned-one  octo/widgets#7 tether (claude)  poisoned");
    expect(err.text()).toContain("context overflow");
  });

  it("lists the sessions a short prefix names instead of guessing", async () => {
    await session("abc-1");
    await session("abc-2");
    const out = sink();
    const err = sink();
    expect(await printTranscript(db.pool, "abc", out, err)).toBe(1);
    expect(out.text()).toBe("");
    expect(err.text()).toContain('2 sessions\' ids start with "abc"');
    expect(err.text()).toContain("abc-1");
    expect(err.text()).toContain("abc-2");
  });

  it("says why there is nothing to read", async () => {
    await session("pruned-session", { stored: false });
    const err = sink();
    expect(await printTranscript(db.pool, "pruned-session", sink(), err)).toBe(1);
    expect(err.text()).toContain("no transcript stored");
    expect(err.text()).toContain("TETHER_DEBUG_KEEP_HOURS");
    const none = sink();
    expect(await printTranscript(db.pool, "zzz-nothing", sink(), none)).toBe(1);
    expect(none.text()).toContain('no session\'s id starts with "zzz-nothing"');
    // A prefix is matched as text, never as a pattern.
    const bad = sink();
    expect(await printTranscript(db.pool, "%", sink(), bad)).toBe(2);
    expect(bad.text()).toContain("usage: tether transcript");
    const underscore = sink();
    expect(await printTranscript(db.pool, "abc_", sink(), underscore)).toBe(1);
    expect(underscore.text()).toContain("no session's id starts with");
  });
});

describe("runningEmbeddedUrl", () => {
  it("connects to the embedded PostgreSQL a live process holds, through the port in its lock", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-transcript-"));
    expect(await runningEmbeddedUrl({ dataDir })).toBeUndefined();
    const owner = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    children.push(owner);
    await new Promise((r) => owner.once("spawn", r));
    const pid = owner.pid!;
    fs.writeFileSync(
      path.join(dataDir, "postgres.lock"),
      JSON.stringify({
        pid,
        startTime: processState(pid).startTime,
        bootId: fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(),
        hostname: os.hostname(),
        startedAt: new Date().toISOString(),
        port: 54321,
      }),
    );
    fs.writeFileSync(path.join(dataDir, "postgres.password"), "s3cret/pw\n", { mode: 0o600 });
    expect(await runningEmbeddedUrl({ dataDir })).toBe(
      "postgres://tether:s3cret%2Fpw@127.0.0.1:54321/postgres",
    );
    owner.kill("SIGKILL");
    await new Promise((r) => owner.once("exit", r));
    // Its owner gone: nobody to connect to (the command starts the database itself then).
    expect(await runningEmbeddedUrl({ dataDir })).toBeUndefined();
  });
});

describe("node src/main.ts transcript", () => {
  it("prints the transcript on stdout and nothing else", async () => {
    await session("f00dfeed-cli", { state: "retired" });
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "src/main.ts", "transcript", "f00dfeed"],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          DATABASE_URL: db.url,
          TETHER_ENV_FILE: "",
          TETHER_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), "tether-transcript-")),
        },
      },
    );
    children.push(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const code = await new Promise((r) => child.once("exit", r));
    expect({ code, stdout }).toEqual({ code: 0, stdout: LINES.join("") });
    expect(stderr).toContain("f00dfeed-cli");
    expect(stderr).toContain("retired");
  });
});
