import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/agent-cli/runtime-adapter.js";
import { ANTHROPIC_PLACEHOLDER } from "../../src/providers/anthropic/endpoint.js";
import { createOpencodeCli } from "../../src/opencode/opencode-cli.js";
import { opencodeLayout } from "../../src/opencode/session-db.js";
import { postgresTranscripts } from "../../src/sessions/postgres-transcripts.js";
import { upsertSession } from "../../src/sql/sessions.js";
import { createTestDatabase } from "../helpers/db.js";
import {
  replies,
  startFakeAnthropic,
  userTexts,
  type FakeRequest,
} from "../helpers/fake-anthropic.js";
import { adapterHarness } from "../helpers/adapter-harness.js";
import { resolveOpencodeBinary } from "../helpers/real-opencode.js";
import { repoIdOf } from "../helpers/seed.js";

/*
 * The opencode adapter (src/opencode/) running the real pinned opencode binary inside Tether's
 * sandbox (bubblewrap, the egress proxy holding the key) against the fake Messages API on
 * 127.0.0.1. Each run is a few seconds of the CLI's start-up; limits are generous for a loaded
 * machine.
 */

const MODEL = "claude-sonnet-4-5";
const KEY = "sk-ant-real-key-for-opencode-tests-0000";
const h = adapterHarness({
  name: "opencode",
  model: MODEL,
  limitMs: 180_000,
  commit: true,
  startFake: startFakeAnthropic,
  env: (fake) => ({ ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: fake.url }),
  createCli: ({ log, baseEnv }) =>
    createOpencodeCli({ path: resolveOpencodeBinary(), log, baseEnv }),
});
const { root, log, place, spec } = h;
const db = await createTestDatabase();

const since = (n: number): FakeRequest[] => h.fake.messageRequests().slice(n);
const everything = (reqs: FakeRequest[]) => reqs.map((r) => JSON.stringify(r.body)).join("\n");

describe("opencode adapter, real CLI in the sandbox", { timeout: 300_000 }, () => {
  it("a fresh turn: the session id is the first event, the answer, honest usage and cost, the key swapped in by the proxy", async () => {
    const before = h.fake.messageRequests().length;
    h.fake.script(replies.text("FRESH-ANSWER"));
    const events: RunEvent[] = [];
    const o = await h.cli.start(spec(place(), { onEvent: (e) => void events.push(e) })).outcome;
    expect(o).toMatchObject({ kind: "success", resultText: "FRESH-ANSWER", toolRan: false });
    expect(o.sessionId).toMatch(/^ses_[0-9A-Za-z]{26}$/);
    expect(events[0]).toMatchObject({ type: "init", sessionId: o.sessionId, model: MODEL });
    // One model call: no title call, no model list, nothing else.
    const reqs = since(before);
    expect(reqs).toHaveLength(1);
    expect(reqs[0]!.headers["x-api-key"]).toBe(KEY);
    expect(reqs[0]!.body?.model).toBe(MODEL);
    const u = reqs[0]!.usage!;
    expect(o.usage).toMatchObject({
      inputTokens: u.input_tokens,
      outputTokens: u.output_tokens,
      cacheReadTokens: u.cache_read_input_tokens,
      cacheCreationTokens: u.cache_creation_input_tokens,
      numTurns: 1,
      model: MODEL,
    });
    // Sonnet's list price: $3 in, $15 out a million; a cache write 1.25x, a read 0.1x.
    const listed =
      (u.input_tokens * 3 +
        u.cache_creation_input_tokens * 3.75 +
        u.cache_read_input_tokens * 0.3 +
        u.output_tokens * 15) /
      1e6;
    expect(o.usage.costUsd).toBeCloseTo(listed, 6);
    // Tools offered: no web fetch.
    const tools = (reqs[0]!.body?.tools ?? []).map((t) => t.name);
    expect(tools).toContain("bash");
    expect(tools).not.toContain("webfetch");
  });

  it("a session saved to Postgres by one runner resumes on another: the API sees the earlier turn, the same session id", async () => {
    const p = place();
    const before = h.fake.messageRequests().length;
    h.fake.script(replies.text("FIRST-ANSWER"), replies.text("SECOND-ANSWER"));
    const first = await h.cli.start(spec(p, { prompt: "FIRST-QUESTION" })).outcome;
    expect(first.kind).toBe("success");
    const sessionId = first.sessionId!;
    const key = {
      repoId: repoIdOf("octo/opencode"),
      repo: "octo/opencode",
      issueNumber: h.dirs,
      agent: "tether",
    };
    await upsertSession(db.pool, {
      cli: "claude",
      ...key,
      sessionId,
      runtimeId: "rt-a",
      workDir: "/workspace",
      model: MODEL,
      historyEpoch: 0,
    });
    const store = (name: string) =>
      postgresTranscripts({
        pool: db.pool,
        cacheRoot: path.join(root, `cache-${name}`),
        log,
        maxBytes: 64 * 1024 * 1024,
        cliVersion: "1.18.33",
        layout: opencodeLayout,
      });
    const saved = await store("a").save(key, sessionId, p.home);
    expect(saved?.kind).toBe("replace");
    // The WAL was folded into the database: one file is the whole session.
    const dir = path.join(p.home, ".local", "share", "opencode");
    expect(fs.existsSync(path.join(dir, "opencode.db-wal"))).toBe(false);
    // Another runner: a fresh HOME, nothing on its disk.
    const home2 = path.join(root, `home-restored-${h.dirs}`);
    fs.mkdirSync(home2);
    const restored = await store("b").restore(key, sessionId, home2, "/workspace");
    expect(restored.from).toBe("store");
    const second = await h.cli.start(
      spec({ cwd: p.cwd, home: home2 }, { prompt: "SECOND-QUESTION", resumeSessionId: sessionId }),
    ).outcome;
    expect(second).toMatchObject({ kind: "success", sessionId, resultText: "SECOND-ANSWER" });
    const [, r2] = since(before);
    const said = userTexts(r2!).join("\n");
    expect(said).toContain("FIRST-QUESTION");
    expect(JSON.stringify(r2!.body?.messages)).toContain("FIRST-ANSWER");
    expect(userTexts(r2!).at(-1)).toContain("SECOND-QUESTION");
    // Only this turn's call is counted, and the cached prefix was read.
    expect(second.usage.numTurns).toBe(1);
    expect(second.usage.cacheReadTokens).toBe(r2!.usage!.cache_read_input_tokens);
    expect(second.usage.cacheReadTokens).toBeGreaterThan(0);
  });

  it("a session the CLI does not hold → resume_rejected, no request, no tool", async () => {
    const o = await h.resumeUnknown(
      "ses_00000000000000000000000000",
      () => h.fake.messageRequests().length,
    );
    expect(o.detail).toContain("does not hold session");
  });

  it("an overflow the CLI compacts its way out of answers in the same turn; one it cannot → poisoned", async () => {
    h.fake.script(
      replies.promptTooLong(),
      replies.text("SUMMARY"),
      replies.text("AFTER-COMPACTION"),
    );
    const events: RunEvent[] = [];
    const o = await h.cli.start(spec(place(), { onEvent: (e) => void events.push(e) })).outcome;
    expect(o).toMatchObject({ kind: "success", resultText: "AFTER-COMPACTION" });
    expect(events.some((e) => e.type === "compacted")).toBe(true);

    h.fake.setDefault(replies.promptTooLong());
    const stuck = await h.overflowed();
    expect(stuck.sessionId).toMatch(/^ses_/);
  });

  it("a 401 → auth_failed, naming the variable to check", async () => {
    h.fake.setDefault(replies.unauthorized());
    const o = await h.keyRefused("ANTHROPIC_API_KEY");
    expect(o.detail).toContain("401");
  });

  it("tools write and run in the workspace; the agent sees the placeholder, never the key or Tether's tokens", async () => {
    const p = place();
    h.fake.script(
      replies.toolUse("write", {
        filePath: "/workspace/made.txt",
        content: "written by the agent\n",
      }),
      replies.toolUse("bash", {
        command: "cat made.txt; env | grep -E 'ANTHROPIC|GITHUB' || true",
        description: "look",
      }),
      replies.text("DONE"),
    );
    const before = h.fake.messageRequests().length;
    const o = await h.cli.start(spec(p)).outcome;
    expect(o).toMatchObject({ kind: "success", toolRan: true, resultText: "DONE" });
    expect(fs.readFileSync(path.join(p.cwd, "made.txt"), "utf8")).toBe("written by the agent\n");
    const reqs = since(before);
    expect(reqs).toHaveLength(3);
    const out = JSON.stringify(reqs[2]!.body?.messages);
    expect(out).toContain("written by the agent");
    expect(out).toContain(ANTHROPIC_PLACEHOLDER);
    expect(out).not.toContain(KEY);
    expect(out).not.toContain("ghs_must_not_leak");
    expect(o.usage.numTurns).toBe(3);
  });

  it("the repository's opencode.json, .opencode/ (plugins, agents, commands, skills), AGENTS.md and CLAUDE.md do nothing", async () => {
    const plugin = (name: string) =>
      `import fs from "node:fs";\nfs.writeFileSync("/workspace/RAN-${name}", "x");\nexport default { id: "${name}", setup: async () => fs.writeFileSync("/workspace/SETUP-${name}", "x") };\nexport const P = async () => { fs.writeFileSync("/workspace/INIT-${name}", "x"); return {}; };\n`;
    const p = place({
      "opencode.json": JSON.stringify({
        plugin: ["file:///workspace/evil.js"],
        plugins: ["file:///workspace/evil.js"],
        instructions: ["EXTRA.md"],
        agent: { build: { prompt: "MARKER_OPENCODE_JSON" } },
      }),
      "opencode.jsonc": '{ "agent": { "build": { "prompt": "MARKER_OPENCODE_JSONC" } } }',
      "evil.js": plugin("json"),
      ".opencode/plugin/evil.js": plugin("dir"),
      ".opencode/plugins/evil.js": plugin("dirs"),
      ".opencode/agent/build.md": "---\ndescription: MARKER_AGENT_MD\n---\nMARKER_AGENT_MD\n",
      ".opencode/command/go.md": "---\ndescription: MARKER_COMMAND\n---\nMARKER_COMMAND\n",
      ".opencode/skill/s1/SKILL.md": "---\nname: s1\ndescription: MARKER_SKILL_1\n---\nx\n",
      ".claude/skills/s2/SKILL.md": "---\nname: s2\ndescription: MARKER_SKILL_2\n---\nx\n",
      "EXTRA.md": "MARKER_INSTRUCTIONS\n",
      "AGENTS.md": "MARKER_AGENTS_MD\n",
      "CLAUDE.md": "MARKER_CLAUDE_MD\n",
    });
    const before = h.fake.messageRequests().length;
    h.fake.script(replies.text("OK"));
    const o = await h.cli.start(spec(p)).outcome;
    expect(o.kind).toBe("success");
    const sent = everything(since(before));
    expect(sent).not.toMatch(/MARKER_/);
    expect(fs.readdirSync(p.cwd).filter((f) => /^(RAN|SETUP|INIT)-/.test(f))).toEqual([]);
    // Without the sandbox the files cannot be hidden: the run is refused, nothing is imported.
    const bare = await h.cli.start({ ...spec(p), sandbox: undefined }).outcome;
    expect(bare.kind).toBe("failed");
    expect(bare.detail).toContain("opencode.json");
    expect(since(before)).toHaveLength(1);
  });

  it("Tether's instructions reach the system prompt", async () => {
    const before = h.fake.messageRequests().length;
    h.fake.script(replies.text("OK"));
    const o = await h.cli.start(
      spec(place(), {
        settings: {
          model: MODEL,
          timeoutMs: 180_000,
          stallMs: 180_000,
          appendSystemPrompt: "TETHER-INSTRUCTIONS-42",
        },
      }),
    ).outcome;
    expect(o, o.detail + o.stderrTail).toMatchObject({ kind: "success" });
    expect(JSON.stringify(since(before)[0]!.body?.system)).toContain("TETHER-INSTRUCTIONS-42");
  });

  it("/cancel stops a run waiting on the API: cancelled, no process left", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    h.fake.script(replies.deferred(held, replies.text("TOO-LATE")));
    const before = h.fake.messageRequests().length;
    const run = h.cli.start(spec(place()));
    await h.fake.waitFor(
      (reqs) => reqs.filter((r) => r.path === "/v1/messages").length > before,
      120_000,
    );
    run.cancel("a /cancel comment");
    const o = await run.outcome;
    release();
    expect(o.kind).toBe("cancelled");
    expect(o.detail).toContain("/cancel");
    // The CLI's process group is gone with it.
    expect(run.pid).toBeGreaterThan(0);
    expect(() => process.kill(-run.pid!, 0)).toThrow();
  });
});
