import { AGENT_CLIS } from "../../src/cli-registry.js";
import { describe, expect, it } from "vitest";
import { parseRepoConfig } from "../../src/config/repo-config.js";
import { checkModel } from "../../src/intake/session-commands.js";

function agent(yaml: Record<string, unknown>) {
  const r = parseRepoConfig({ agents: { tether: yaml } }, AGENT_CLIS);
  if (!r.ok) throw new Error(JSON.stringify(r));
  return r.config.agents.tether!;
}

describe("checkModel (/model <name>)", () => {
  const open = agent({ model: "claude-sonnet-4-5" });
  const listed = agent({ model: "claude-sonnet-4-5", models: ["claude-opus-4-1"] });
  it.each([
    { name: "without models, any model id", a: open, model: "claude-opus-4-1", ok: true },
    { name: "without models, a dated id", a: open, model: "claude-3-5-haiku-20241022", ok: true },
    { name: "a listed model", a: listed, model: "claude-opus-4-1", ok: true },
    {
      name: "the agent's own model, listed or not",
      a: listed,
      model: "claude-sonnet-4-5",
      ok: true,
    },
    { name: "a model not listed", a: listed, model: "claude-haiku-4-5", ok: false },
    { name: "a flag", a: open, model: "--dangerously-skip-permissions", ok: false },
    { name: "a shell word", a: open, model: "opus;rm", ok: false },
    { name: "too long", a: open, model: "a".repeat(101), ok: false },
    { name: "no name", a: open, model: "", ok: false },
  ])("$name", ({ a, model, ok }) => {
    const r = checkModel(a, model);
    expect(r.ok).toBe(ok);
    if (r.ok) expect(r.model).toBe(model);
    else expect(r.reply).toContain("Nothing was run.");
  });

  it("a refusal lists what the agent may run on", () => {
    const r = checkModel(listed, "gpt-4o");
    expect(!r.ok && r.reply).toContain("It may run on: `claude-sonnet-4-5`, `claude-opus-4-1`.");
    const any = checkModel(open, "not a model");
    expect(!any.ok && any.reply).toContain(
      "any model its CLI accepts; its own is `claude-sonnet-4-5`",
    );
  });
});
