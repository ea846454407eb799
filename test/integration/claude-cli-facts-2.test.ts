import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildClaudeArgs, OUT_OF_TURN_TOOLS } from "../../src/claude/claude-args.js";
import { resolveClaudePath } from "../../src/claude/claude-path.js";
import { readEntry } from "../../src/claude/session-entry.js";
import {
  replies,
  startFakeAnthropic,
  userTexts,
  type FakeAnthropic,
  type FakeRequest,
} from "../helpers/fake-anthropic.js";

/*
 * Facts about the Claude CLI that Tether's design leans on, checked against the real binary
 * (the pinned one, or TETHER_CLAUDE_PATH: `npm run test:cli`) talking to the fake Messages API.
 * Each is written up in docs/claude-cli-facts.md ("Claude Code 2.1.332"). The CLI is run
 * directly here, with the arguments Tether builds plus the one flag or variable under test.
 */

const BIN = resolveClaudePath({ TETHER_CLAUDE_PATH: process.env.TETHER_CLAUDE_PATH });
const MODEL = "claude-sonnet-4-5";
const settings = { timeoutMs: 60_000, stallMs: 30_000 };
const root = fs.mkdtempSync(path.join(os.tmpdir(), "tether-claude-facts-"));
const home = path.join(root, "home");
fs.mkdirSync(home);
let fake: FakeAnthropic;

// A minimal MCP server on stdio with one tool, `ping` (so mcp__probe__ping to the model).
const MCP_SERVER = `
import readline from "node:readline";
const send = (m) => process.stdout.write(JSON.stringify(m) + "\\n");
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  if (m.method === "initialize")
    send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params?.protocolVersion ?? "2024-11-05",
      capabilities: { tools: {} }, serverInfo: { name: "probe", version: "1.0.0" } } });
  else if (m.method === "tools/list")
    send({ jsonrpc: "2.0", id: m.id, result: { tools: [{ name: "ping", description: "Answers pong.",
      inputSchema: { type: "object", properties: {} } }] } });
  else send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
});
`;
const mcpConfig = path.join(root, "mcp.json");

beforeAll(async () => {
  fake = await startFakeAnthropic();
  const server = path.join(root, "mcp-server.mjs");
  fs.writeFileSync(server, MCP_SERVER);
  fs.writeFileSync(
    mcpConfig,
    JSON.stringify({
      mcpServers: { probe: { type: "stdio", command: process.execPath, args: [server] } },
    }),
  );
});
afterAll(async () => {
  await fake?.close();
  fs.rmSync(root, { recursive: true, force: true });
});
afterEach(() => expect(fake.pending()).toBe(0));

let dirs = 0;
function workDir(): string {
  const dir = path.join(root, `work-${++dirs}`);
  fs.mkdirSync(dir);
  return dir;
}

interface Run {
  exitCode: number | undefined;
  /** The stream's lines, parsed. */
  lines: Array<Record<string, unknown>>;
  /** The Messages requests this run made. */
  requests: FakeRequest[];
  sessionId: string | undefined;
}

/**
 * One `claude -p` run with the arguments Tether builds (model given), `extra` after them;
 * `ownTools` leaves out Tether's --disallowedTools, to see what the CLI offers of its accord.
 */
async function run(
  extra: string[],
  opts: {
    cwd?: string;
    prompt?: string;
    env?: Record<string, string>;
    model?: string;
    ownTools?: boolean;
  } = {},
): Promise<Run> {
  let args = buildClaudeArgs({ ...settings, model: opts.model ?? MODEL });
  if (opts.ownTools) args = args.slice(0, args.indexOf("--disallowedTools"));
  const before = fake.messageRequests().length;
  const result = await execa(BIN, [...args, ...extra], {
    cwd: opts.cwd ?? workDir(),
    input: opts.prompt ?? "hello",
    extendEnv: false,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      ANTHROPIC_API_KEY: "sk-test",
      ANTHROPIC_BASE_URL: fake.url,
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
      DISABLE_ERROR_REPORTING: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      ...opts.env,
    },
    reject: false,
    timeout: 90_000,
  });
  const lines = result.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const init = lines.find((l) => l.type === "system" && l.subtype === "init");
  return {
    exitCode: result.exitCode,
    lines,
    requests: fake.messageRequests().slice(before),
    sessionId: init?.session_id as string | undefined,
  };
}

/** Tool names the request offers the model directly (a deferred placeholder is marked). */
function directTools(req: FakeRequest): string[] {
  return (req.body?.tools ?? []).map(
    (t) => `${String(t.name)}${t.defer_loading === true ? " (deferred)" : ""}`,
  );
}

/** The names the request lists as "available via ToolSearch" (deferred), or [] when none. */
function deferredTools(req: FakeRequest): string[] {
  for (const message of req.body?.messages ?? []) {
    const blocks =
      typeof message.content === "string" ? [{ text: message.content }] : message.content;
    for (const block of blocks) {
      const text = typeof block.text === "string" ? block.text : "";
      if (!text.includes("deferred tools are now available via ToolSearch")) continue;
      // A sentence ending in a colon, then one name a line up to the reminder's end.
      const list = text.slice(text.indexOf(":\n", text.indexOf("ToolSearch with query")) + 2);
      return list.slice(0, list.indexOf("</system-reminder>")).split("\n").filter(Boolean);
    }
  }
  return [];
}

/** Every cache_control the request carries, as JSON, without repeats. */
function cacheControls(req: FakeRequest): string[] {
  const found = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        if (k === "cache_control") found.add(JSON.stringify(x));
        else walk(x);
      }
    }
  };
  walk(req.body);
  return [...found].sort();
}

/** The session file of `id` for a run in `cwd`. */
function sessionFile(cwd: string, id: string): string {
  return path.join(home, ".claude", "projects", cwd.replace(/[^A-Za-z0-9]/g, "-"), `${id}.jsonl`);
}

describe("the Claude CLI's tool list (ToolSearch and deferred tools)", () => {
  it("offers the core tools directly and defers the rest behind ToolSearch, MCP tools too", async () => {
    // Without Tether's disallow list, to see what the CLI offers of its own accord.
    const r = await run(["--mcp-config", mcpConfig], { ownTools: true });
    expect(r.exitCode).toBe(0);
    const [req] = r.requests;
    const direct = directTools(req!);
    for (const tool of ["Bash", "Read", "Edit", "Write", "ToolSearch", "Workflow"]) {
      expect(direct).toContain(tool);
    }
    expect(direct).toContain("ScheduleWakeup");
    expect(direct).toContain("DeferredToolPlaceholder (deferred)");
    const deferred = deferredTools(req!);
    for (const tool of ["WebFetch", "WebSearch", "CronCreate", "Monitor", "SendMessage"]) {
      expect(deferred).toContain(tool);
      expect(direct).not.toContain(tool);
    }
    // An MCP server's tool stands behind ToolSearch like the others.
    expect(deferred).toContain("mcp__probe__ping");
    expect(direct).not.toContain("mcp__probe__ping");
  });

  it("ENABLE_TOOL_SEARCH=false offers every tool directly, MCP tools included", async () => {
    const r = await run(["--mcp-config", mcpConfig], {
      ownTools: true,
      env: { ENABLE_TOOL_SEARCH: "false" },
    });
    const [req] = r.requests;
    const direct = directTools(req!);
    for (const tool of ["Bash", "WebFetch", "CronCreate", "mcp__probe__ping"]) {
      expect(direct).toContain(tool);
    }
    expect(direct).not.toContain("ToolSearch");
    expect(direct.some((t) => t.endsWith("(deferred)"))).toBe(false);
    expect(deferredTools(req!)).toEqual([]);
  });

  it("Tether's arguments: no tool that acts outside the turn is offered, directly or deferred", async () => {
    const r = await run([]);
    expect(r.exitCode).toBe(0);
    const [req] = r.requests;
    const offered = [...directTools(req!), ...deferredTools(req!)];
    const init = r.lines.find((l) => l.subtype === "init")!;
    for (const tool of OUT_OF_TURN_TOOLS) {
      expect(offered).not.toContain(tool);
      expect(init.tools).not.toContain(tool);
    }
    // The turn's own tools are still there.
    expect(offered).toEqual(expect.arrayContaining(["Bash", "Read", "Edit", "Write", "WebFetch"]));
  });
});

describe("the prompt cache's TTL", () => {
  it.each([
    [{}, [`{"type":"ephemeral"}`]],
    [{ ENABLE_PROMPT_CACHING_1H: "1" }, [`{"type":"ephemeral","ttl":"1h"}`]],
    [{ CLAUDE_CODE_PROMPT_CACHE_TTL: "5m" }, [`{"type":"ephemeral"}`]],
    [{ CLAUDE_CODE_PROMPT_CACHE_TTL: "1h" }, [`{"type":"ephemeral","ttl":"1h"}`]],
  ])("%j → cache_control %j", async (env, expected) => {
    const r = await run([], { env });
    expect(r.exitCode).toBe(0);
    expect(cacheControls(r.requests[0]!)).toEqual(expected);
  });
});

describe("--model and the legacy model remap", () => {
  it("claude-opus-4-1 is asked for as another model unless CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP=1", async () => {
    const model = "claude-opus-4-1";
    const remapped = await run([], { model });
    expect(remapped.exitCode).toBe(0);
    expect(remapped.requests[0]!.body?.model).toMatch(/^claude-opus-/);
    expect(remapped.requests[0]!.body?.model).not.toBe("claude-opus-4-1");

    const kept = await run([], { model, env: { CLAUDE_CODE_DISABLE_LEGACY_MODEL_REMAP: "1" } });
    expect(kept.requests[0]!.body?.model).toBe("claude-opus-4-1");
    expect(kept.lines.find((l) => l.subtype === "init")?.model).toBe("claude-opus-4-1");
  });
});

describe("forking and rewinding a session", () => {
  /** A session of two turns, MARKER-ONE then MARKER-TWO, in a directory of its own. */
  async function twoTurns(): Promise<{ cwd: string; id: string; file: string }> {
    const cwd = workDir();
    const one = await run([], { cwd, prompt: "MARKER-ONE" });
    const id = one.sessionId!;
    const two = await run(["--resume", id], { cwd, prompt: "MARKER-TWO" });
    expect(two.sessionId).toBe(id);
    return { cwd, id, file: sessionFile(cwd, id) };
  }

  it("--resume <id> --fork-session: a new id, the whole history sent, the original file untouched", async () => {
    const s = await twoTurns();
    const original = fs.readFileSync(s.file);
    const fork = await run(["--resume", s.id, "--fork-session"], {
      cwd: s.cwd,
      prompt: "MARKER-FORK",
    });
    expect(fork.exitCode).toBe(0);
    expect(fork.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(fork.sessionId).not.toBe(s.id);
    expect(fork.lines.at(-1)).toMatchObject({ type: "result", session_id: fork.sessionId });
    const [req] = fork.requests;
    expect(req!.body?.messages).toHaveLength(5);
    const texts = userTexts(req!);
    expect(texts[0]).toContain("MARKER-ONE");
    expect(texts[1]).toContain("MARKER-TWO");
    expect(texts.at(-1)).toContain("MARKER-FORK");
    expect(fs.readFileSync(s.file).equals(original)).toBe(true);
    expect(fs.existsSync(sessionFile(s.cwd, fork.sessionId!))).toBe(true);
  });

  it("--resume <id> --resume-session-at <uuid>: the history up to that message, same id, file appended", async () => {
    const s = await twoTurns();
    const before = fs.readFileSync(s.file, "utf8");
    const entries = before
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { type?: string; uuid?: string });
    const firstReply = entries.find((e) => e.type === "assistant")!.uuid!;

    const at = await run(["--resume", s.id, "--resume-session-at", firstReply], {
      cwd: s.cwd,
      prompt: "MARKER-AT",
    });
    expect(at.exitCode).toBe(0);
    expect(at.sessionId).toBe(s.id);
    const [req] = at.requests;
    expect(req!.body?.messages).toHaveLength(3);
    const texts = userTexts(req!);
    expect(texts[0]).toContain("MARKER-ONE");
    expect(texts.at(-1)).toContain("MARKER-AT");
    expect(JSON.stringify(req!.body?.messages)).not.toContain("MARKER-TWO");
    // Appended to, not rewritten: the old lines stay, the new branch follows them.
    expect(fs.readFileSync(s.file, "utf8").startsWith(before)).toBe(true);

    // A plain resume afterwards follows the new branch.
    const after = await run(["--resume", s.id], { cwd: s.cwd, prompt: "MARKER-AFTER" });
    const sent = JSON.stringify(after.requests[0]!.body?.messages);
    expect(after.requests[0]!.body?.messages).toHaveLength(5);
    expect(sent).toContain("MARKER-AT");
    expect(sent).not.toContain("MARKER-TWO");
  });
});

describe("where a resumed turn entered its session (src/claude/session-entry.ts)", () => {
  it("the first line a resume appends hangs from the session's last message; resuming there leaves that turn out", async () => {
    const cwd = workDir();
    const one = await run([], { cwd, prompt: "ENTRY-ONE" });
    const id = one.sessionId!;
    const file = sessionFile(cwd, id);
    const before = fs.readFileSync(file, "utf8");
    const last = before
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { uuid?: string })
      .filter((e) => typeof e.uuid === "string")
      .at(-1)!.uuid;
    await run(["--resume", id], { cwd, prompt: "ENTRY-TWO" });
    const entry = await readEntry(file, Buffer.byteLength(before));
    expect(entry).toBe(last);

    const at = await run(["--resume", id, "--resume-session-at", entry!], {
      cwd,
      prompt: "ENTRY-THREE",
    });
    expect(at.sessionId).toBe(id);
    const sent = JSON.stringify(at.requests[0]!.body?.messages);
    expect(sent).toContain("ENTRY-ONE");
    expect(sent).not.toContain("ENTRY-TWO");
    expect(userTexts(at.requests[0]!).at(-1)).toContain("ENTRY-THREE");
  });
});

describe("a resumed turn whose prompt is too long", () => {
  it("the CLI compacts by itself and answers: same session, a compact_boundary, the summary sent", async () => {
    const cwd = workDir();
    const one = await run([], { cwd, prompt: "TOO-LONG-ONE" });
    fake.script(replies.promptTooLong());
    const two = await run(["--resume", one.sessionId!], { cwd, prompt: "TOO-LONG-TWO" });
    expect(two.exitCode).toBe(0);
    expect(two.sessionId).toBe(one.sessionId);
    expect(two.lines.find((l) => l.subtype === "compact_boundary")).toMatchObject({
      compact_metadata: { trigger: "auto" },
    });
    expect(two.lines.at(-1)).toMatchObject({ type: "result", is_error: false });
    const last = two.requests.at(-1)!;
    expect(JSON.stringify(last.body?.messages)).toContain("being continued from a previous");
    expect(JSON.stringify(last.body?.messages)).not.toContain("TOO-LONG-ONE");
    expect(userTexts(last).at(-1)).toContain("TOO-LONG-TWO");
  });

  it("when the summaries are too long as well, it gives up: prompt_too_long, exit 1", async () => {
    const cwd = workDir();
    const one = await run([], { cwd, prompt: "TOO-LONG-ONE" });
    fake.setDefault(replies.promptTooLong());
    try {
      const two = await run(["--resume", one.sessionId!], { cwd, prompt: "TOO-LONG-TWO" });
      expect(two.exitCode).toBe(1);
      expect(two.lines.at(-1)).toMatchObject({
        type: "result",
        is_error: true,
        terminal_reason: "prompt_too_long",
        session_id: one.sessionId,
      });
    } finally {
      fake.reset();
    }
  });
});
