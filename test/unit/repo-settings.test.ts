import { AGENT_CLIS } from "../../src/cli-registry.js";
import { describe, expect, it } from "vitest";
import { parseRepoConfig } from "../../src/config/repo-config.js";
import {
  readSettingsSnapshot,
  snapshotSettings,
  toRepoSettings,
} from "../../src/config/repo-settings.js";

function config(raw: unknown) {
  const parsed = parseRepoConfig(raw, AGENT_CLIS);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.config;
}

describe("the settings snapshot on a task", () => {
  const cfg = config({
    agents: {
      tether: { model: "claude-opus-4-1", maxTurns: 12, allowedTools: ["Bash(npm test:*)"] },
      reviewer: {
        mention: "@review-bot",
        appendSystemPrompt: "Be brief.",
        turnLimitUsd: 0.5,
        conversationLimitUsd: 4,
      },
    },
    resume: { ttlHours: 6 },
    spend: { repositoryMonthlyUsd: 300, freshResetsConversation: true },
  });

  it("reads back, through JSON as Postgres stores it, exactly what the runner would have read", () => {
    const stored = JSON.parse(JSON.stringify(snapshotSettings(cfg))) as unknown;
    expect(readSettingsSnapshot(stored)).toEqual(toRepoSettings(cfg));
  });

  it("carries each agent's changes mode and the publish settings", () => {
    const withPublish = config({
      agents: { tether: { changes: "branch" } },
      publish: { link: "refs", maxFiles: 7 },
    });
    const read = readSettingsSnapshot(JSON.parse(JSON.stringify(snapshotSettings(withPublish))));
    expect(read?.agents.tether?.changes).toBe("branch");
    expect(read?.publish).toMatchObject({ link: "refs", maxFiles: 7, draft: true });
  });

  it("carries changes.protectedPaths; a snapshot taken before it reads without (the default applies)", () => {
    const guarded = config({ changes: { protectedPaths: [".github/**", "Makefile"] } });
    const snap = JSON.parse(JSON.stringify(snapshotSettings(guarded))) as {
      publish: Record<string, unknown>;
    };
    expect(readSettingsSnapshot(snap)?.publish?.protectedPaths).toEqual([".github/**", "Makefile"]);
    delete snap.publish.protectedPaths;
    const old = readSettingsSnapshot(snap);
    expect(old?.publish).toMatchObject({ workflows: false });
    expect(old?.publish?.protectedPaths).toBeUndefined();
  });

  it("reads a snapshot taken before publishing existed, leaving the defaults to the runner", () => {
    const { publish: _publish, ...old } = snapshotSettings(cfg);
    const agents = Object.fromEntries(
      Object.entries(old.agents).map(([k, { changes: _changes, ...a }]) => [k, a]),
    );
    const read = readSettingsSnapshot({ ...old, agents });
    expect(read).not.toBeNull();
    expect(read?.publish).toBeUndefined();
    expect(read?.agents.tether?.changes).toBeUndefined();
  });

  it("keeps each agent's cli; a snapshot taken before a second CLI (none named) is not used", () => {
    const codex = config({ agents: { tether: { cli: "codex" } } });
    const stored = JSON.parse(JSON.stringify(snapshotSettings(codex))) as unknown;
    expect(readSettingsSnapshot(stored)?.agents.tether?.cli).toBe("codex");
    const before = JSON.parse(JSON.stringify(snapshotSettings(cfg))) as {
      agents: Record<string, Record<string, unknown>>;
    };
    expect(readSettingsSnapshot(before)).not.toBeNull();
    for (const a of Object.values(before.agents)) delete a.cli;
    // The config sits below the CLIs and knows no default one: the runner reads the config.
    expect(readSettingsSnapshot(before)).toBeNull();
  });

  it("keeps resume.compact, and reads a snapshot taken before it as compacting (the default)", () => {
    const off = config({ resume: { compact: false } });
    const stored = JSON.parse(JSON.stringify(snapshotSettings(off))) as unknown;
    expect(readSettingsSnapshot(stored)?.resume.compact).toBe(false);
    const before = JSON.parse(JSON.stringify(snapshotSettings(cfg))) as {
      resume: Record<string, unknown>;
    };
    delete before.resume.compact;
    const read = readSettingsSnapshot(before);
    expect(read).not.toBeNull();
    expect(read!.resume.compact ?? true).toBe(true);
  });

  it.each([
    ["no snapshot (a task queued before snapshots)", null],
    ["another version's", { ...snapshotSettings(cfg), v: 3 }],
    // v1 had no spend limits: its task reads the config, which may have limits now.
    ["one taken before spend limits (v1)", { ...snapshotSettings(cfg), v: 1, spend: undefined }],
    ["one without a version", toRepoSettings(cfg)],
    ["a damaged one", { v: 1, agents: { tether: { name: "tether" } }, resume: {} }],
    ["not an object", "agents: {}"],
  ])("is not used when it is %s: the runner reads the config instead", (_name, stored) => {
    expect(readSettingsSnapshot(stored)).toBeNull();
  });
});
