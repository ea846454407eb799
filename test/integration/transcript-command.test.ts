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

/** What an agent can make a transcript hold: a tool's output or a file it read, as JSON keeps it. */
const HOSTILE = [
  // ESC and BEL are escaped by the CLI's JSON (as \u001b), and show raw once JSON is read…
  '{"type":"tool_result","content":"ok"}\n',
  // …but DEL and C1 controls (CSI is U+009B) are written raw by JSON.stringify; and a transcript
  // is whatever the CLI wrote, not always JSON.
  `{"type":"assistant","text":"\u009b2J\u007f"}\n`,
  "\u001b]0;pwned\u0007\u001b[2J\u001b]52;c;cm0gLXJmIH4=\u0007\r\u202Eevil\n",
];

async function session(
  id: string,
  o: { stored?: boolean; state?: string; reason?: string; lines?: string[] } = {},
) {
  await upsertSession(db.pool, {
    repoId: repoIdOf("octo/widgets"),
    cli: "claude",
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
      "UPDATE sessions SET state = $2, state_reason = $3, state_changed_at = now() WHERE session_id = $1",
      [id, o.state, o.reason ?? "context overflow"],
    );
  if (o.stored === false) return;
  const raw = (o.lines ?? LINES).map((l) => Buffer.from(l));
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

function sink(o: { isTTY?: boolean } = {}) {
  const parts: Buffer[] = [];
  return {
    ...o,
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

/** A control character a terminal acts on: every C0 but the line feed and tab, DEL, C1. */
// eslint-disable-next-line no-control-regex -- matching them is the point
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

describe("printTranscript to a terminal (#38)", () => {
  it("escapes the control characters an agent put there; the JSON still reads the same", async () => {
    await session("c0ffee00-hostile", {
      state: "poisoned",
      reason: "api said \u001b[31mno\u001b[0m",
      lines: HOSTILE,
    });
    const out = sink({ isTTY: true });
    const err = sink({ isTTY: true });
    expect(await printTranscript(db.pool, "c0ffee00", out, err)).toBe(0);
    expect(out.text()).not.toMatch(CONTROL);
    expect(out.text()).not.toContain("\u202E");
    expect(err.text()).not.toMatch(CONTROL);
    expect(err.text()).toContain("api said \\u001b[31mno");
    const lines = out.text().split("\n");
    expect(lines[0]).toBe(HOSTILE[0]!.trimEnd());
    expect(JSON.parse(lines[1]!)).toEqual(JSON.parse(HOSTILE[1]!));
    expect(lines[2]).toBe(
      "\\u001b]0;pwned\\u0007\\u001b[2J\\u001b]52;c;cm0gLXJmIH4=\\u0007\\u000d\\u202eevil",
    );
  });

  it("writes the bytes as stored when stdout is not a terminal (a file, a pipe)", async () => {
    await session("c0ffee01-hostile", { state: "retired", lines: HOSTILE });
    const out = sink();
    expect(await printTranscript(db.pool, "c0ffee01", out, sink())).toBe(0);
    expect(out.text()).toBe(HOSTILE.join(""));
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

  it("in a terminal (util-linux `script` gives it one), an agent's control characters reach it escaped", async () => {
    await session("c0ffee02-tty", { state: "poisoned", lines: HOSTILE });
    const child = spawn(
      "/usr/bin/script",
      [
        "--quiet",
        "--return",
        "--command",
        "node --import tsx src/main.ts transcript c0ffee02",
        "/dev/null",
      ],
      {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          SHELL: "/bin/sh",
          DATABASE_URL: db.url,
          TETHER_ENV_FILE: "",
          TETHER_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), "tether-transcript-")),
        },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    children.push(child);
    let seen = "";
    child.stdout.on("data", (d) => (seen += d));
    const code = await new Promise((r) => child.once("exit", r));
    expect(code).toBe(0);
    // The terminal turns each line feed into CR LF; nothing else may act on it.
    const shown = seen.replace(/\r\n/g, "\n");
    expect(shown).toContain("c0ffee02-tty");
    expect(shown).toContain("\\u001b]0;pwned\\u0007");
    expect(shown).not.toMatch(CONTROL);
  });
});
