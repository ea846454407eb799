import { describe, expect, it } from "vitest";
import {
  AGENT_CONTROL_PATHS,
  parseLsTree,
  planMasks,
  type CheckoutKind,
  type MaskDecision,
  type TreeKind,
} from "../../src/workspace/agent-control.js";

const plan = (
  changed: string[] | null,
  base: Record<string, TreeKind>,
  checkout: Record<string, CheckoutKind>,
): MaskDecision =>
  planMasks({
    changed,
    base: new Map(Object.entries(base)),
    checkout: new Map(Object.entries(checkout)),
  });

describe("planMasks", () => {
  const rows: Array<{
    name: string;
    changed: string[] | null;
    base: Record<string, TreeKind>;
    checkout: Record<string, CheckoutKind>;
    masks: MaskDecision["masks"];
    skipped?: string[];
  }> = [
    {
      name: "nothing changed: no masks, whatever the checkout holds",
      changed: [],
      base: { ".claude": "tree", "CLAUDE.md": "blob" },
      checkout: { ".claude": "dir", "CLAUDE.md": "file" },
      masks: [],
    },
    {
      name: "a file under a changed directory masks the directory with the base's version",
      changed: [".claude/settings.json"],
      base: { ".claude": "tree" },
      checkout: { ".claude": "dir" },
      masks: [{ path: ".claude", kind: "dir", from: "base" }],
    },
    {
      name: "a file the base lacks is hidden",
      changed: [".mcp.json"],
      base: {},
      checkout: { ".mcp.json": "file" },
      masks: [{ path: ".mcp.json", kind: "file", from: "hide" }],
    },
    {
      name: "a directory the base lacks is hidden",
      changed: [".husky/pre-commit"],
      base: {},
      checkout: { ".husky": "dir" },
      masks: [{ path: ".husky", kind: "dir", from: "hide" }],
    },
    {
      name: "a changed file the base has shows the base's",
      changed: ["CLAUDE.md"],
      base: { "CLAUDE.md": "blob" },
      checkout: { "CLAUDE.md": "file" },
      masks: [{ path: "CLAUDE.md", kind: "file", from: "base" }],
    },
    {
      name: "changed but gone from the checkout: nothing to mask",
      changed: ["AGENTS.md"],
      base: { "AGENTS.md": "blob" },
      checkout: {},
      masks: [],
    },
    {
      name: "the head turned a directory into a file: the file is hidden (a directory cannot cover it)",
      changed: [".claude", ".claude/settings.json"],
      base: { ".claude": "tree" },
      checkout: { ".claude": "file" },
      masks: [{ path: ".claude", kind: "file", from: "hide" }],
    },
    {
      name: "the base has a link or a submodule there: hidden, never materialized",
      changed: ["CLAUDE.md", ".codex"],
      base: { "CLAUDE.md": "symlink", ".codex": "gitlink" },
      checkout: { "CLAUDE.md": "file", ".codex": "dir" },
      masks: [
        { path: "CLAUDE.md", kind: "file", from: "hide" },
        { path: ".codex", kind: "dir", from: "hide" },
      ],
    },
    {
      name: "a link in the checkout is never masked (bubblewrap would follow it), and says so",
      changed: ["CLAUDE.local.md"],
      base: {},
      checkout: { "CLAUDE.local.md": "symlink" },
      masks: [],
      skipped: ["CLAUDE.local.md"],
    },
    {
      name: "a fifo or socket in the checkout is skipped too",
      changed: ["lefthook.yml"],
      base: {},
      checkout: { "lefthook.yml": "other" },
      masks: [],
      skipped: ["lefthook.yml"],
    },
    {
      name: "unknown changes (the comparison failed): every present control path is masked",
      changed: null,
      base: { ".claude": "tree" },
      checkout: { ".claude": "dir", ".gitmodules": "file", "README.md": "file" },
      masks: [
        { path: ".claude", kind: "dir", from: "base" },
        { path: ".gitmodules", kind: "file", from: "hide" },
      ],
    },
    {
      name: "only whole path names match: .claude-notes and CLAUDE.md.bak are not control paths",
      changed: [".claude-notes/x", "CLAUDE.md.bak", "docs/CLAUDE.md", "sub/.claude/settings.json"],
      base: {},
      checkout: { ".claude": "dir", "CLAUDE.md": "file" },
      masks: [],
    },
  ];
  it.each(rows)("$name", (row) => {
    const d = plan(row.changed, row.base, row.checkout);
    expect(d.masks).toEqual(row.masks);
    expect(d.skipped.map((s) => s.path)).toEqual(row.skipped ?? []);
  });

  it("covers every path the brief names, each of them at the top of the checkout", () => {
    expect([...AGENT_CONTROL_PATHS].sort()).toEqual(
      [
        ".claude",
        ".mcp.json",
        ".claude.json",
        "CLAUDE.md",
        "CLAUDE.local.md",
        "AGENTS.md",
        ".codex",
        ".gemini",
        "GEMINI.md",
        ".geminiignore",
        ".aiexclude",
        "opencode.json",
        "opencode.jsonc",
        ".opencode",
        ".gitmodules",
        ".husky",
        ".githooks",
        "lefthook.yml",
        ".pre-commit-config.yaml",
      ].sort(),
    );
    // Every control path changed and present as a file: each one masked.
    const all = Object.fromEntries(AGENT_CONTROL_PATHS.map((p) => [p, "file" as const]));
    expect(plan([...AGENT_CONTROL_PATHS], {}, all).masks).toHaveLength(AGENT_CONTROL_PATHS.length);
  });
});

describe("parseLsTree", () => {
  it("reads modes, kinds, sizes and paths with tabs or spaces in them", () => {
    const out = [
      "040000 tree 1111111111111111111111111111111111111111       -\t.claude",
      "100644 blob 2222222222222222222222222222222222222222      12\tCLAUDE.md",
      "100755 blob 3333333333333333333333333333333333333333       5\t.husky/pre commit\tx",
      "120000 blob 4444444444444444444444444444444444444444       9\tAGENTS.md",
      "160000 commit 5555555555555555555555555555555555555555       -\t.codex",
      "",
    ].join("\0");
    expect(parseLsTree(out)).toEqual([
      { mode: "040000", kind: "tree", sha: "1".repeat(40), size: null, path: ".claude" },
      { mode: "100644", kind: "blob", sha: "2".repeat(40), size: 12, path: "CLAUDE.md" },
      { mode: "100755", kind: "blob", sha: "3".repeat(40), size: 5, path: ".husky/pre commit\tx" },
      { mode: "120000", kind: "symlink", sha: "4".repeat(40), size: 9, path: "AGENTS.md" },
      { mode: "160000", kind: "gitlink", sha: "5".repeat(40), size: null, path: ".codex" },
    ]);
  });
});
