import { describe, expect, it } from "vitest";
import { buildClaudeArgs, OUT_OF_TURN_TOOLS, SESSION_ID } from "../../src/claude/claude-args.js";
import { RunSettings } from "../../src/agent-cli/runtime-adapter.js";

// Every run: print mode, the stream, and nothing the checkout or HOME carries configures the
// agent (no settings sources, no MCP servers but Tether's: none).
const BASE = [
  "-p",
  "--output-format",
  "stream-json",
  "--verbose",
  "--setting-sources",
  "",
  "--strict-mcp-config",
];
const limits = { timeoutMs: 60_000, stallMs: 30_000 };

describe("buildClaudeArgs", () => {
  const rows: Array<{
    name: string;
    settings: Partial<RunSettings>;
    resume?: string;
    args: string[];
  }> = [
    { name: "bare", settings: {}, args: BASE },
    {
      name: "model always passed when given",
      settings: { model: "claude-sonnet-4-5" },
      args: [...BASE, "--model", "claude-sonnet-4-5"],
    },
    {
      name: "resume",
      settings: { model: "claude-sonnet-4-5" },
      resume: "d3526fa6-dfe2-405c-ad61-19274b86848a",
      args: [
        ...BASE,
        "--model",
        "claude-sonnet-4-5",
        "--resume",
        "d3526fa6-dfe2-405c-ad61-19274b86848a",
      ],
    },
    {
      name: "a per-turn spend limit",
      settings: { maxBudgetUsd: 0.5 },
      args: [...BASE, "--max-budget-usd", "0.5"],
    },
    {
      name: "everything",
      settings: {
        model: "opus",
        maxTurns: 30,
        permissionMode: "acceptEdits",
        appendSystemPrompt: "Answer in French.\nBe brief.",
        allowedTools: ["Read", "Bash(git log:*)"],
        disallowedTools: ["WebFetch"],
      },
      args: [
        ...BASE,
        "--model",
        "opus",
        "--max-turns",
        "30",
        "--permission-mode",
        "acceptEdits",
        "--append-system-prompt",
        "Answer in French.\nBe brief.",
        "--allowedTools",
        "Read",
        "Bash(git log:*)",
        "--disallowedTools",
        "WebFetch",
        ...OUT_OF_TURN_TOOLS,
      ],
    },
    {
      name: "empty tool lists are left out",
      settings: { allowedTools: [], disallowedTools: [] },
      args: BASE,
    },
  ];
  it.each(rows)("$name", ({ settings, resume, args }) => {
    // Every run ends with the tools that act outside the turn, refused.
    const expected = args.includes("--disallowedTools")
      ? args
      : [...args, "--disallowedTools", ...OUT_OF_TURN_TOOLS];
    expect(buildClaudeArgs({ ...limits, ...settings }, resume)).toEqual(expected);
  });

  it("always refuses the tools that act outside the turn, even ones the agent allows", () => {
    const args = buildClaudeArgs({
      ...limits,
      allowedTools: ["ScheduleWakeup", "Bash"],
      disallowedTools: ["Workflow", "WebFetch"],
    });
    const at = args.indexOf("--disallowedTools");
    expect(args.indexOf("--disallowedTools", at + 1)).toBe(-1);
    const refused = args.slice(at + 1);
    expect(refused).toEqual([
      "Workflow",
      "WebFetch",
      ...OUT_OF_TURN_TOOLS.filter((t) => t !== "Workflow"),
    ]);
    for (const tool of ["ScheduleWakeup", "Workflow", "CronCreate", "Monitor", "SendMessage"]) {
      expect(refused).toContain(tool);
    }
  });

  it("never puts the prompt on the command line", () => {
    expect(buildClaudeArgs({ ...limits, model: "m" }).join(" ")).not.toMatch(/prompt/i);
  });
});

describe("RunSettings", () => {
  const rows: Array<{ input: Record<string, unknown>; valid: boolean }> = [
    { input: limits, valid: true },
    {
      input: { ...limits, model: "claude-sonnet-4-5", maxTurns: 5, permissionMode: "plan" },
      valid: true,
    },
    { input: { ...limits, allowedTools: ["Bash(npm test:*)", "Read"] }, valid: true },
    { input: {}, valid: false },
    { input: { ...limits, timeoutMs: 0 }, valid: false },
    { input: { ...limits, model: "--dangerously-skip-permissions" }, valid: false },
    { input: { ...limits, allowedTools: ["--resume"] }, valid: false },
    { input: { ...limits, allowedTools: ["Bash\nRead"] }, valid: false },
    { input: { ...limits, permissionMode: "yolo" }, valid: false },
    { input: { ...limits, maxTurns: 1.5 }, valid: false },
    { input: { ...limits, maxBudgetUsd: 0.25 }, valid: true },
    // The CLI crashes on `--max-budget-usd 0` and on negative amounts: never passed.
    { input: { ...limits, maxBudgetUsd: 0 }, valid: false },
    { input: { ...limits, maxBudgetUsd: -1 }, valid: false },
    { input: { ...limits, appendSystemPrompt: "x".repeat(100_001) }, valid: false },
  ];
  it.each(rows)("%j valid=$valid", ({ input, valid }) => {
    expect(RunSettings.safeParse(input).success).toBe(valid);
  });
});

describe("--resume-session-at (a rewind)", () => {
  it("goes with a resume only, after it", () => {
    const args = buildClaudeArgs(
      { ...limits, resumeAt: "9d1ba7c6-efe3-4622-baac-cf0518b41a80" },
      "s-1",
    );
    expect(args.slice(args.indexOf("--resume"), args.indexOf("--resume") + 4)).toEqual([
      "--resume",
      "s-1",
      "--resume-session-at",
      "9d1ba7c6-efe3-4622-baac-cf0518b41a80",
    ]);
    expect(buildClaudeArgs({ ...limits, resumeAt: "9d1ba7c6" })).not.toContain(
      "--resume-session-at",
    );
  });
  it.each([
    ["9d1ba7c6-efe3-4622-baac-cf0518b41a80", true],
    ["--fork-session", false],
    ["a b", false],
    ["", false],
  ])("resumeAt %s valid=%s", (at, ok) => {
    expect(RunSettings.safeParse({ ...limits, resumeAt: at }).success).toBe(ok);
  });
});

describe("SESSION_ID", () => {
  it.each([
    ["d3526fa6-dfe2-405c-ad61-19274b86848a", true],
    ["--fork-session", false],
    ["", false],
    ["a b", false],
    ["x".repeat(129), false],
  ])("%s → %s", (id, ok) => {
    expect(SESSION_ID.test(id)).toBe(ok);
  });
});

describe("buildClaudeArgs with Tether's tool server", () => {
  const mcp = {
    name: "tether",
    outDir: "/run/tether/out",
    command: "/usr/bin/node",
    args: ["/app/line-comment-server.mjs", "/run/tether/out/line-comments.jsonl"],
    tools: ["comment_on_line"],
  };
  it("adds it with --mcp-config (loaded up front) and allows its tool beside the agent's", () => {
    const args = buildClaudeArgs({ ...limits, allowedTools: ["Read"] }, undefined, mcp);
    const config = JSON.parse(args[args.indexOf("--mcp-config") + 1]!);
    expect(config).toEqual({
      mcpServers: {
        tether: {
          type: "stdio",
          command: "/usr/bin/node",
          args: mcp.args,
          alwaysLoad: true,
        },
      },
    });
    expect(args).toContain("--strict-mcp-config");
    expect(args.slice(args.indexOf("--allowedTools"), args.indexOf("--disallowedTools"))).toEqual([
      "--allowedTools",
      "Read",
      "mcp__tether__comment_on_line",
    ]);
  });
  it("no server: no --mcp-config", () => {
    expect(buildClaudeArgs(limits)).not.toContain("--mcp-config");
  });
});

describe("buildClaudeArgs: the operator's MCP servers (#39)", () => {
  it("are in --mcp-config with their tools loaded up front, every tool of each allowed, and nothing else configures MCP", () => {
    const args = buildClaudeArgs({ ...limits, allowedTools: ["Bash"] }, undefined, undefined, [
      {
        name: "sentry",
        type: "stdio",
        command: "socat",
        args: ["-", "UNIX-CONNECT:/run/tether/mcp-sentry.sock"],
        env: {},
      },
      { name: "docs", type: "http", url: "http://127.0.0.1:8088/mcp/docs", headers: {} },
    ]);
    expect(args).toContain("--strict-mcp-config");
    const config = JSON.parse(args[args.indexOf("--mcp-config") + 1]!);
    expect(config).toEqual({
      mcpServers: {
        sentry: {
          type: "stdio",
          command: "socat",
          args: ["-", "UNIX-CONNECT:/run/tether/mcp-sentry.sock"],
          env: {},
          alwaysLoad: true,
        },
        docs: {
          type: "http",
          url: "http://127.0.0.1:8088/mcp/docs",
          headers: {},
          alwaysLoad: true,
        },
      },
    });
    const allowed = args.slice(
      args.indexOf("--allowedTools") + 1,
      args.indexOf("--disallowedTools"),
    );
    expect(allowed).toEqual(["Bash", "mcp__sentry", "mcp__docs"]);
  });
});
