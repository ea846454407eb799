import { AGENT_CLIS } from "../../src/cli-registry.js";
import { describe, expect, it } from "vitest";
import {
  defaultConfig,
  formatConfigProblems,
  mentionsOf,
  parseRepoConfig,
} from "../../src/config/repo-config.js";

type Row = { name: string; input: unknown; valid: boolean; problem?: RegExp };

const ROWS: Row[] = [
  { name: "no file", input: undefined, valid: true },
  { name: "an empty file", input: null, valid: true },
  { name: "an empty mapping", input: {}, valid: true },
  { name: "empty sections", input: { agents: null, resume: null, access: null }, valid: true },
  { name: "an agent with all defaults", input: { agents: { reviewer: null } }, valid: true },
  {
    name: "triggers beyond a mention",
    input: { agents: { a: { reviews: "all", label: "ai: fix", assignee: "tether-bot" } } },
    valid: true,
  },
  { name: "no label", input: { agents: { a: { label: false } } }, valid: true },
  {
    name: "an unknown review mode",
    input: { agents: { a: { reviews: "approved" } } },
    valid: false,
    problem: /agents\.a\.reviews.*changes_requested, all or mentions/,
  },
  {
    name: "an assignee that is no login",
    input: { agents: { a: { assignee: "not a login" } } },
    valid: false,
    problem: /agents\.a\.assignee/,
  },
  {
    name: "every agent field",
    input: {
      agents: {
        reviewer: {
          mention: "@review-bot",
          model: "claude-opus-4-1",
          maxTurns: 12,
          timeoutMinutes: 20,
          stallMinutes: 5,
          allowedTools: ["Read", "Bash(npm test:*)"],
          disallowedTools: ["WebFetch"],
          permissionMode: "plan",
          appendSystemPrompt: "Be terse.",
        },
      },
    },
    valid: true,
  },
  {
    name: "resume settings",
    input: { resume: { enabled: false, ttlHours: 1.5, contextBudget: 0.5, compact: false } },
    valid: true,
  },
  {
    name: "access settings",
    input: {
      access: { minPermission: "triage", allowUsers: ["octocat"], allowBots: ["renovate[bot]"] },
    },
    valid: true,
  },

  {
    name: "a list instead of a mapping",
    input: ["agents"],
    valid: false,
    problem: /^\(file\): must be a mapping/,
  },
  { name: "a string", input: "agents: yes", valid: false, problem: /^\(file\)/ },
  {
    name: "an unknown top-level key",
    input: { agent: {} },
    valid: false,
    problem: /^agent: unknown setting; did you mean "agents"\?/,
  },
  {
    name: "a typo in an agent field",
    input: { agents: { tether: { modle: "x" } } },
    valid: false,
    problem: /^agents\.tether\.modle: unknown setting; did you mean "model"\?/,
  },
  {
    name: "a codex agent",
    input: { agents: { coder: { cli: "codex" } } },
    valid: true,
  },
  {
    name: "an unknown cli",
    input: { agents: { coder: { cli: "mistral" } } },
    valid: false,
    problem: /^agents\.coder\.cli: must be claude or codex or gemini or opencode/,
  },
  {
    name: "an opencode agent",
    input: { agents: { coder: { cli: "opencode" } } },
    valid: true,
  },
  {
    name: "Claude's tool rules on an opencode agent",
    input: { agents: { coder: { cli: "opencode", disallowedTools: ["Bash"] } } },
    valid: false,
    problem: /^agents\.coder\.disallowedTools: is a tool rule; a cli: opencode agent has none/,
  },
  {
    name: "Claude's tool rules on a codex agent",
    input: { agents: { coder: { cli: "codex", allowedTools: ["Read"] } } },
    valid: false,
    problem: /^agents\.coder\.allowedTools: is a tool rule; a cli: codex agent has none/,
  },
  {
    name: "an unknown agent field",
    input: { agents: { tether: { colour: "red" } } },
    valid: false,
    problem: /^agents\.tether\.colour: unknown setting \(known: mention, cli, model/,
  },
  {
    name: "an upper-case agent name",
    input: { agents: { Reviewer: {} } },
    valid: false,
    problem: /^agents\.Reviewer: agent names are lower case/,
  },
  {
    name: "a mention without @",
    input: { agents: { tether: { mention: "tether" } } },
    valid: false,
    problem: /^agents\.tether\.mention: must be @/,
  },
  {
    name: "two agents with one mention",
    input: { agents: { a: { mention: "@x" }, b: { mention: "@X" } } },
    valid: false,
    problem: /^agents\.b\.mention: @x addresses both agents "a" and "b"/,
  },
  {
    name: "an agent given the default mention: the built-in agent steps aside",
    input: { agents: { claude: { mention: "@tether" } } },
    valid: true,
  },
  {
    name: "an agent given the default mention in other case",
    input: { agents: { claude: { mention: "@Tether" } } },
    valid: true,
  },
  {
    name: "an agent given the default mention, and tether configured too",
    input: { agents: { tether: {}, claude: { mention: "@tether" } } },
    valid: false,
    problem: /^agents\.claude\.mention: @tether addresses both agents "tether" and "claude"/,
  },
  {
    name: "tether renamed, and its old mention given to another agent",
    input: { agents: { tether: { mention: "@bot" }, claude: { mention: "@tether" } } },
    valid: true,
  },
  {
    name: "an agent named like another's mention",
    input: { agents: { review: {}, claude: { mention: "@review" } } },
    valid: false,
    problem: /^agents\.claude\.mention: @review addresses both agents "review" and "claude"/,
  },
  {
    name: "three agents on one mention: each later one named with all of them",
    input: { agents: { a: { mention: "@x" }, b: { mention: "@x" }, c: { mention: "@x" } } },
    valid: false,
    problem: /^agents\.c\.mention: @x addresses agents "a", "b" and "c"/,
  },
  {
    name: "mentions that share a prefix are different mentions",
    input: { agents: { claude: { mention: "@tether" }, review: { mention: "@tether-review" } } },
    valid: true,
  },
  {
    name: "spend limits",
    input: {
      agents: { tether: { turnLimitUsd: 0.5, conversationLimitUsd: 20 } },
      spend: {
        repositoryMonthlyUsd: 300,
        installationMonthlyUsd: 2000,
        freshResetsConversation: true,
      },
    },
    valid: true,
  },
  { name: "an empty spend section", input: { spend: null }, valid: true },
  {
    name: "a turn limit of 0 (the CLI crashes on it)",
    input: { agents: { tether: { turnLimitUsd: 0 } } },
    valid: false,
    problem: /^agents\.tether\.turnLimitUsd: must be more than 0/,
  },
  {
    name: "a negative conversation limit",
    input: { agents: { tether: { conversationLimitUsd: -5 } } },
    valid: false,
    problem: /^agents\.tether\.conversationLimitUsd: must be more than 0/,
  },
  {
    name: "a limit written with a dollar sign",
    input: { agents: { tether: { turnLimitUsd: "$2" } } },
    valid: false,
    problem: /^agents\.tether\.turnLimitUsd: must be a number of US dollars/,
  },
  {
    name: "a monthly limit under the agent instead of spend",
    input: { agents: { tether: { repositoryMonthlyUsd: 5 } } },
    valid: false,
    problem: /^agents\.tether\.repositoryMonthlyUsd: unknown setting/,
  },
  {
    name: "a typo in spend",
    input: { spend: { repositoryMontlyUsd: 5 } },
    valid: false,
    problem: /^spend\.repositoryMontlyUsd: unknown setting; did you mean "repositoryMonthlyUsd"\?/,
  },
  {
    name: "freshResetsConversation as a string",
    input: { spend: { freshResetsConversation: "yes" } },
    valid: false,
    problem: /^spend\.freshResetsConversation: /,
  },
  {
    name: "an absurd monthly limit",
    input: { spend: { installationMonthlyUsd: 1e12 } },
    valid: false,
    problem: /^spend\.installationMonthlyUsd: must be at most/,
  },
  {
    name: "maxTurns out of range",
    input: { agents: { tether: { maxTurns: 0 } } },
    valid: false,
    problem: /^agents\.tether\.maxTurns: /,
  },
  {
    name: "a fractional timeout",
    input: { agents: { tether: { timeoutMinutes: 1.5 } } },
    valid: false,
    problem: /^agents\.tether\.timeoutMinutes: must be a whole number/,
  },
  {
    name: "an unknown permission mode",
    input: { agents: { tether: { permissionMode: "yolo" } } },
    valid: false,
    problem: /^agents\.tether\.permissionMode: /,
  },
  {
    name: "a tool rule that looks like a flag",
    input: { agents: { tether: { allowedTools: ["--dangerously"] } } },
    valid: false,
    problem: /^agents\.tether\.allowedTools\[0\]: must be a tool name/,
  },
  {
    name: "a model id with spaces",
    input: { agents: { tether: { model: "claude sonnet" } } },
    valid: false,
    problem: /^agents\.tether\.model: must be a model id/,
  },
  {
    name: "a model id that looks like a flag",
    input: { agents: { tether: { model: "--dangerously" } } },
    valid: false,
    problem: /^agents\.tether\.model: must be a model id/,
  },
  {
    name: "the models a comment may ask for",
    input: { agents: { tether: { models: ["claude-opus-4-1", "claude-haiku-4-5"] } } },
    valid: true,
  },
  {
    name: "a listed model with spaces",
    input: { agents: { tether: { models: ["claude opus"] } } },
    valid: false,
    problem: /^agents\.tether\.models\[0\]: must be a model id/,
  },
  {
    name: "escalation models, any model allowed",
    input: { agents: { tether: { escalate: ["claude-opus-4-1", "claude-opus-4-5"] } } },
    valid: true,
  },
  {
    name: "escalation models among the agent's models (its own model is one)",
    input: {
      agents: {
        tether: {
          model: "claude-haiku-4-5",
          models: ["claude-opus-4-1"],
          escalate: ["claude-haiku-4-5", "claude-opus-4-1"],
        },
      },
    },
    valid: true,
  },
  {
    name: "an escalation model the agent's models do not list",
    input: {
      agents: { tether: { models: ["claude-opus-4-1"], escalate: ["claude-opus-4-1", "gpt-4o"] } },
    },
    valid: false,
    problem:
      /^agents\.tether\.escalate\[1\]: gpt-4o is not one of this agent's models \(claude-sonnet-4-5, claude-opus-4-1\); add it to models/,
  },
  {
    name: "a codex agent's escalation checked against Codex's default model",
    input: {
      agents: { coder: { cli: "codex", models: ["gpt-5.6"], escalate: ["gpt-5.5", "o3"] } },
    },
    valid: false,
    problem:
      /^agents\.coder\.escalate\[1\]: o3 is not one of this agent's models \(gpt-5\.5, gpt-5\.6\)/,
  },
  {
    name: "an escalation model id that looks like a flag",
    input: { agents: { tether: { escalate: ["--dangerously"] } } },
    valid: false,
    problem: /^agents\.tether\.escalate\[0\]: must be a model id/,
  },
  {
    name: "an empty escalation list",
    input: { agents: { tether: { escalate: [] } } },
    valid: false,
    problem: /^agents\.tether\.escalate: list at least one model, or leave it out/,
  },
  {
    name: "a context budget over 1",
    input: { resume: { contextBudget: 1.2 } },
    valid: false,
    problem: /^resume\.contextBudget: /,
  },
  {
    name: "a context budget of 0",
    input: { resume: { contextBudget: 0 } },
    valid: false,
    problem: /^resume\.contextBudget: /,
  },
  {
    name: "a negative time to live",
    input: { resume: { ttlHours: -1 } },
    valid: false,
    problem: /^resume\.ttlHours: /,
  },
  {
    name: "resume enabled as a string",
    input: { resume: { enabled: "yes" } },
    valid: false,
    problem: /^resume\.enabled: /,
  },
  {
    name: "an unknown permission",
    input: { access: { minPermission: "owner" } },
    valid: false,
    problem: /^access\.minPermission: /,
  },
  {
    name: "a login with spaces",
    input: { access: { allowUsers: ["john doe"] } },
    valid: false,
    problem: /^access\.allowUsers\[0\]: must be a GitHub login/,
  },
  {
    name: "every changes mode",
    input: {
      agents: { a: { changes: "pull_request" }, b: { changes: "branch" }, c: { changes: "off" } },
    },
    valid: true,
  },
  {
    name: "publish settings",
    input: {
      publish: {
        draft: false,
        link: "refs",
        workflows: true,
        maxFiles: 5,
        maxBytes: 2048,
      },
      changes: { signedCommits: false },
    },
    valid: true,
  },
  {
    name: "signedCommits is true or false",
    input: { changes: { signedCommits: "yes" } },
    valid: false,
    problem: /^changes\.signedCommits: /,
  },
  {
    name: "signedCommits is a changes setting, not publish's",
    input: { publish: { signedCommits: true } },
    valid: false,
  },
  {
    name: "an unknown changes mode",
    input: { agents: { tether: { changes: "push" } } },
    valid: false,
    problem: /^agents\.tether\.changes: /,
  },
  {
    name: "protected paths of the repository's own",
    input: {
      changes: { protectedPaths: [".github/**", "package.json", "Makefile", "scripts/**"] },
    },
    valid: true,
  },
  {
    name: "changes: with nothing after it (the default)",
    input: { changes: null },
    valid: true,
  },
  {
    name: "a protected path from the file system's root",
    input: { changes: { protectedPaths: ["/etc/passwd"] } },
    valid: false,
    problem: /^changes\.protectedPaths\[0\]: is a path from the repository's root/,
  },
  {
    name: "an empty protected path",
    input: { changes: { protectedPaths: [""] } },
    valid: false,
    problem: /^changes\.protectedPaths\[0\]: must not be empty/,
  },
  {
    name: "protected paths as one string",
    input: { changes: { protectedPaths: ".github/**" } },
    valid: false,
    problem: /^changes\.protectedPaths: /,
  },
  {
    name: "a typo in publish",
    input: { publish: { maxfiles: 5 } },
    valid: false,
    problem: /^publish\.maxfiles: unknown setting; did you mean "maxFiles"\?/,
  },
  {
    name: "a publish cap below its floor",
    input: { publish: { maxBytes: 10 } },
    valid: false,
    problem: /^publish\.maxBytes: must be at least 1024/,
  },
  {
    name: "an unknown link style",
    input: { publish: { link: "fixes" } },
    valid: false,
    problem: /^publish\.link: /,
  },
  {
    name: "too many agents",
    input: { agents: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`a${i}`, {}])) },
    valid: false,
    problem: /^agents: at most 20 agents/,
  },
  {
    name: "a weekly schedule on an issue",
    input: { schedules: [{ cron: "0 9 * * 1", issue: 42, request: "Triage." }] },
    valid: true,
  },
  {
    name: "a schedule that opens its issue, in a time zone, for a named agent",
    input: {
      agents: { triage: {} },
      schedules: [
        {
          cron: "30 8 * * 1-5",
          timezone: "Europe/Paris",
          agent: "triage",
          title: "Daily report",
          request: "Report.",
        },
      ],
    },
    valid: true,
  },
  {
    name: "a schedule with a bad cron field",
    input: { schedules: [{ cron: "61 9 * * 1", issue: 1, request: "x" }] },
    valid: false,
    problem: /^schedules\[0\]\.cron: is not a cron expression: .*61/,
  },
  {
    name: "a six-field (seconds) cron",
    input: { schedules: [{ cron: "0 0 9 * * 1", issue: 1, request: "x" }] },
    valid: false,
    problem: /^schedules\[0\]\.cron: must have five fields/,
  },
  {
    name: "a schedule tighter than the minimum interval",
    input: { schedules: [{ cron: "*/5 * * * *", issue: 1, request: "x" }] },
    valid: false,
    problem: /^schedules\[0\]\.cron: runs every 5 minutes; .*at most every 10 minutes/,
  },
  {
    name: "a schedule whose ticks bunch within the hour",
    input: { schedules: [{ cron: "0,3 9 * * *", issue: 1, request: "x" }] },
    valid: false,
    problem: /^schedules\[0\]\.cron: runs every 3 minutes/,
  },
  {
    name: "a schedule for an unknown agent",
    input: { schedules: [{ cron: "0 9 * * 1", agent: "nobody", issue: 1, request: "x" }] },
    valid: false,
    problem: /^schedules\[0\]\.agent: no agent is called nobody \(agents: tether\)/,
  },
  {
    name: "a schedule in an unknown time zone",
    input: { schedules: [{ cron: "0 9 * * 1", timezone: "Mars/Olympus", issue: 1, request: "x" }] },
    valid: false,
    problem: /^schedules\[0\]\.timezone: must be an IANA time zone/,
  },
  {
    name: "a schedule with both issue and title",
    input: { schedules: [{ cron: "0 9 * * 1", issue: 1, title: "t", request: "x" }] },
    valid: false,
    problem: /^schedules\[0\]\.issue: give either issue/,
  },
  {
    name: "a schedule with neither issue nor title",
    input: { schedules: [{ cron: "0 9 * * 1", request: "x" }] },
    valid: false,
    problem: /^schedules\[0\]\.issue: give either issue/,
  },
  {
    name: "two schedules on one conversation",
    input: {
      schedules: [
        { cron: "0 9 * * 1", issue: 7, request: "x" },
        { cron: "0 9 * * 5", issue: 7, request: "y" },
      ],
    },
    valid: false,
    problem: /^schedules\[1\]\.issue: schedules\[0\] already continues this conversation/,
  },
  {
    name: "a schedule with a misspelt field",
    input: { schedules: [{ cron: "0 9 * * 1", issue: 1, requets: "x" }] },
    valid: false,
    problem: /^schedules\[0\]\.requets: unknown setting; did you mean "request"\?/,
  },
  {
    name: "too many schedules",
    input: {
      schedules: Array.from({ length: 21 }, (_, i) => ({
        cron: "0 9 * * 1",
        issue: i + 1,
        request: "x",
      })),
    },
    valid: false,
    problem: /^schedules: at most 20 schedules a repository/,
  },
];

describe("parseRepoConfig", () => {
  it.each(ROWS)("$name → valid: $valid", ({ input, valid, problem }) => {
    const result = parseRepoConfig(input, AGENT_CLIS);
    expect(result.ok).toBe(valid);
    if (!result.ok && problem) {
      const lines = result.problems.map((p) => `${p.path}: ${p.message}`);
      expect(
        lines.some((l) => problem.test(l)),
        lines.join("\n"),
      ).toBe(true);
    }
  });

  it("gives a codex agent Codex's default model, and a claude agent Claude's", () => {
    const r = parseRepoConfig({ agents: { coder: { cli: "codex" }, other: {} } }, AGENT_CLIS);
    expect(r.ok && r.config.agents.coder).toMatchObject({ cli: "codex", model: "gpt-5.5" });
    expect(r.ok && r.config.agents.other).toMatchObject({
      cli: "claude",
      model: AGENT_CLIS[0].defaultModel,
    });
  });

  it("gives a gemini agent Gemini's default model, and keeps its tool rules (the CLI's policy takes them)", () => {
    const r = parseRepoConfig(
      {
        agents: { gem: { cli: "gemini", disallowedTools: ["web_fetch"] } },
      },
      AGENT_CLIS,
    );
    expect(r.ok && r.config.agents.gem).toMatchObject({
      cli: "gemini",
      model: "gemini-2.5-pro",
      disallowedTools: ["web_fetch"],
    });
  });

  it("fills every default when the file is absent", () => {
    expect(defaultConfig(AGENT_CLIS)).toEqual({
      agents: {
        tether: {
          mention: "@tether",
          cli: "claude",
          model: AGENT_CLIS[0].defaultModel,
          maxTurns: 30,
          mcpServers: [],
          timeoutMinutes: 30,
          stallMinutes: 10,
          allowedTools: [],
          disallowedTools: [],
          permissionMode: "acceptEdits",
          plan: "off",
          network: "model-only",
          projectInstructions: false,
          changes: "pull_request",
          requestChanges: false,
          reviews: "changes_requested",
          label: "tether",
          cacheTtl: "auto",
          ci: { mode: "fix", maxAttempts: 3 },
        },
      },
      resume: { enabled: true, ttlHours: 72, contextBudget: 0.8, compact: true },
      access: { minPermission: "write", allowUsers: [], allowBots: [] },
      publish: {
        draft: true,
        link: "closes",
        workflows: false,
        maxFiles: 100,
        maxBytes: 1024 * 1024,
      },
      changes: { protectedPaths: [".github/**"], signedCommits: true },
      spend: { freshResetsConversation: false },
      schedules: [],
    });
  });

  /**
   * The default-agent rule, as the agents a config ends up with: the built-in agent `tether`
   * (answering to `@tether`) exists only while no configured agent answers to `@tether`, and
   * listing `tether` configures it.
   */
  it.each([
    { name: "no agents", agents: {}, want: { tether: "@tether" } },
    {
      name: "another agent only",
      agents: { reviewer: {} },
      want: { tether: "@tether", reviewer: "@reviewer" },
    },
    {
      name: "an own agent with the default mention",
      agents: { claude: { mention: "@tether" } },
      want: { claude: "@tether" },
    },
    {
      name: "an own agent with the default mention, beside a prefix-sharing agent",
      agents: { claude: { mention: "@tether" }, review: { mention: "@tether-review" } },
      want: { claude: "@tether", review: "@tether-review" },
    },
    {
      name: "a prefix-sharing agent alone: the built-in agent keeps @tether",
      agents: { review: { mention: "@tether-review" } },
      want: { tether: "@tether", review: "@tether-review" },
    },
    {
      name: "tether configured under its own name",
      agents: { tether: { maxTurns: 3 } },
      want: { tether: "@tether" },
    },
    {
      name: "tether renamed: nobody answers @tether",
      agents: { tether: { mention: "@bot" } },
      want: { tether: "@bot" },
    },
    {
      name: "tether renamed and @tether given away",
      agents: { tether: { mention: "@bot" }, claude: { mention: "@TETHER" } },
      want: { tether: "@bot", claude: "@TETHER" },
    },
  ])("agents of $name", ({ agents, want }) => {
    const r = parseRepoConfig({ agents }, AGENT_CLIS);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(
      Object.fromEntries(Object.entries(r.config.agents).map(([n, a]) => [n, a.mention])),
    ).toEqual(want);
  });

  it("gives an own agent on the default mention its own settings, not the built-in agent's", () => {
    const r = parseRepoConfig(
      {
        agents: { claude: { mention: "@tether", model: "claude-opus-4-1", turnLimitUsd: 1 } },
      },
      AGENT_CLIS,
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.config.agents.tether).toBeUndefined();
    expect(r.config.agents.claude).toMatchObject({
      mention: "@tether",
      model: "claude-opus-4-1",
      turnLimitUsd: 1,
      maxTurns: 30,
    });
  });

  it("keeps the default agent beside configured ones, and lets it be renamed", () => {
    const r = parseRepoConfig(
      {
        agents: { tether: { mention: "@claude" }, reviewer: { maxTurns: 5 } },
      },
      AGENT_CLIS,
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(Object.keys(r.config.agents).sort()).toEqual(["reviewer", "tether"]);
    expect(r.config.agents.tether).toMatchObject({
      mention: "@claude",
      model: AGENT_CLIS[0].defaultModel,
    });
    expect(r.config.agents.reviewer).toMatchObject({
      mention: "@reviewer",
      maxTurns: 5,
      timeoutMinutes: 30,
    });
  });

  it("reports every problem, not just the first", () => {
    const r = parseRepoConfig(
      {
        agents: { tether: { maxTurns: 0, modle: "x" } },
        access: { minPermission: "x" },
      },
      AGENT_CLIS,
    );
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems.map((p) => p.path).sort()).toEqual([
      "access.minPermission",
      "agents.tether.maxTurns",
      "agents.tether.modle",
    ]);
  });
});

describe("formatConfigProblems", () => {
  it("names the file and lists each problem with its path", () => {
    const text = formatConfigProblems([
      { path: "agents.tether.modle", message: 'unknown setting; did you mean "model"?' },
      { path: "resume.ttlHours", message: "Too small: expected number to be >0" },
    ]);
    expect(text.split("\n").slice(0, 4)).toEqual([
      "Invalid config in .github/tether.yml:",
      "",
      '- `agents.tether.modle`: unknown setting; did you mean "model"?',
      "- `resume.ttlHours`: Too small: expected number to be >0",
    ]);
  });

  it("does not let a message ping anyone or run past one line", () => {
    const text = formatConfigProblems([
      { path: "agents.b.mention", message: "@x already\naddresses" },
    ]);
    expect(text).not.toMatch(/(^|\s)@x\b/);
    expect(text).toContain("already addresses");
  });
});

describe("mentionsOf (a file that failed validation)", () => {
  it.each([
    [undefined, ["@tether"]],
    ["nonsense", ["@tether"]],
    [{ agents: { reviewer: { mention: "@rb", maxTurns: -1 } } }, ["@tether", "@rb"]],
    [{ agents: { helper: { maxTurns: "x" } } }, ["@tether", "@helper"]],
    [{ agents: { tether: { mention: "@claude" } } }, ["@claude"]],
    // An own agent on the default mention: the built-in agent is not there to answer too.
    [{ agents: { claude: { mention: "@tether", maxTurns: -1 } } }, ["@tether"]],
    [
      { agents: { claude: { mention: "@tether" }, review: { mention: "@tether-review", x: 1 } } },
      ["@tether", "@tether-review"],
    ],
  ])("%j → %j", (raw, mentions) => {
    expect(mentionsOf(raw).map((m) => m.mention)).toEqual(mentions);
  });
});

describe("trigger defaults", () => {
  it("an agent answers to changes-requested reviews and to its own name as a label, and to no assignee", () => {
    expect(defaultConfig(AGENT_CLIS).agents.tether).toMatchObject({
      reviews: "changes_requested",
      label: "tether",
    });
    expect(defaultConfig(AGENT_CLIS).agents.tether!.assignee).toBeUndefined();
    const parsed = parseRepoConfig(
      { agents: { fixer: { label: false }, helper: null } },
      AGENT_CLIS,
    );
    if (!parsed.ok) throw new Error("invalid");
    expect(parsed.config.agents.fixer!.label).toBeNull();
    expect(parsed.config.agents.helper!.label).toBe("helper");
  });
});
