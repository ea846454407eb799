import { describe, expect, it } from "vitest";
import {
  addedMentionNames,
  mentionedNames,
  newlyAddressed,
  parseComment,
  type AgentMention,
  type Command,
} from "../../src/intake/parse-comment.js";

const AGENTS: AgentMention[] = [
  { agent: "tether", mention: "@tether" },
  { agent: "reviewer", mention: "@Review-Bot" },
];

type Row = {
  name: string;
  body: string;
  /** agent → commands; omitted agents are not addressed. */
  addressed: Record<string, Command[]>;
  request?: string;
};

const ROWS: Row[] = [
  // who is addressed
  {
    name: "a leading mention",
    body: "@tether fix the build",
    addressed: { tether: [] },
    request: "fix the build",
  },
  {
    name: "a mention mid-sentence keeps its words",
    body: "Could @tether look at this?",
    addressed: { tether: [] },
    request: "Could @tether look at this?",
  },
  {
    name: "mentions match without case",
    body: "@TETHER hi",
    addressed: { tether: [] },
    request: "hi",
  },
  {
    name: "a configured mention",
    body: "@review-bot please review",
    addressed: { reviewer: [] },
    request: "please review",
  },
  { name: "the agent's name is not its mention", body: "@reviewer please", addressed: {} },
  {
    name: "two agents in one comment",
    body: "@tether @review-bot compare notes",
    addressed: { tether: [], reviewer: [] },
    request: "compare notes",
  },
  {
    name: "an agent mentioned twice counts once",
    body: "@tether one\n\n@tether two",
    addressed: { tether: [] },
    request: "one\n\ntwo",
  },
  { name: "a bare mention", body: "@tether", addressed: { tether: [] }, request: "" },
  {
    name: "a mention followed by a colon",
    body: "@tether: look",
    addressed: { tether: [] },
    request: "look",
  },
  {
    name: "sentence punctuation after a mention",
    body: "Thanks @tether.",
    addressed: { tether: [] },
  },
  { name: "nobody", body: "LGTM", addressed: {}, request: "LGTM" },
  { name: "someone else", body: "@alice what do you think?", addressed: {} },

  // what is not a mention
  { name: "a longer login", body: "@tether-bot hi", addressed: {} },
  { name: "a team", body: "@tether/maintainers hi", addressed: {} },
  { name: "an email address", body: "mail me at me@tether.dev", addressed: {} },
  { name: "a domain after the name", body: "see @tether.dev", addressed: {} },
  { name: "a path", body: "npm i some/@tether", addressed: {} },

  // code and quotes do not trigger
  { name: "inline code", body: "use `@tether fix` to ask", addressed: {} },
  { name: "inline code with double backticks", body: "``@tether ` x``", addressed: {} },
  {
    name: "an unmatched backtick does not hide the rest",
    body: "a ` b @tether go",
    addressed: { tether: [] },
  },
  { name: "an escaped backtick opens no span", body: "\\`@tether go`", addressed: { tether: [] } },
  {
    name: "a backslash inside a span does not escape its end",
    body: "`a\\` @tether go",
    addressed: { tether: [] },
  },
  { name: "fenced code", body: "```\n@tether do it\n```", addressed: {} },
  { name: "tilde fence", body: "~~~ts\n@tether\n~~~\n", addressed: {} },
  { name: "an unclosed fence hides the rest", body: "```\n@tether\n", addressed: {} },
  {
    name: "a shorter fence does not close a longer one",
    body: "````\n```\n@tether\n````",
    addressed: {},
  },
  {
    name: "after a closed fence, prose again",
    body: "```\ncode\n```\n@tether look",
    addressed: { tether: [] },
    request: "```\ncode\n```\nlook",
  },
  { name: "indented code", body: "text\n\n    @tether in code", addressed: {} },
  {
    name: "indented text inside a list is prose",
    body: "- item\n\n    @tether look",
    addressed: { tether: [] },
  },
  { name: "a quote", body: "> @tether did this\n\nthanks", addressed: {} },
  {
    name: "a quote's lazy continuation line",
    body: "> quoted\n@tether lazily quoted",
    addressed: {},
  },
  {
    name: "a reply after a quote",
    body: "> @tether said X\n\n@tether do Y",
    addressed: { tether: [] },
    request: "> @tether said X\n\ndo Y",
  },
  { name: "an HTML comment", body: "<!-- @tether -->done", addressed: {} },
  {
    name: "an HTML comment block across paragraphs",
    body: "<!--\n@tether\n\n@tether\n-->\nok",
    addressed: {},
  },

  // commands
  {
    name: "/fresh with a request",
    body: "@tether /fresh start over",
    addressed: { tether: ["fresh"] },
    request: "start over",
  },
  { name: "/fresh alone", body: "@tether /fresh", addressed: { tether: ["fresh"] }, request: "" },
  {
    name: "/plan with a request",
    body: "@tether /plan add a cache",
    addressed: { tether: ["plan"] },
    request: "add a cache",
  },
  { name: "/go alone", body: "@tether /go", addressed: { tether: ["go"] }, request: "" },
  {
    name: "/go with more words",
    body: "@tether /go but skip the docs",
    addressed: { tether: ["go"] },
    request: "but skip the docs",
  },
  { name: "a bare go approves", body: "@tether go", addressed: { tether: ["go"] }, request: "" },
  { name: "a bare Go! approves", body: "@tether Go!", addressed: { tether: ["go"] }, request: "" },
  {
    name: "a bare go on its line, more below",
    body: "@tether go\nand mind the tests",
    addressed: { tether: ["go"] },
    request: "and mind the tests",
  },
  {
    name: "go that starts a sentence is a request",
    body: "@tether go ahead and fix it",
    addressed: { tether: [] },
    request: "go ahead and fix it",
  },
  {
    name: "go after a mid-sentence mention is a request",
    body: "Should @tether go?",
    addressed: { tether: [] },
    request: "Should @tether go?",
  },
  {
    name: "/gone is no command",
    body: "@tether /gone",
    addressed: { tether: [] },
    request: "/gone",
  },

  { name: "/cancel", body: "@tether /cancel", addressed: { tether: ["cancel"] }, request: "" },
  { name: "/status", body: "@tether /status", addressed: { tether: ["status"] } },
  { name: "/help", body: "@tether /help", addressed: { tether: ["help"] } },
  { name: "commands without case", body: "@tether /STATUS", addressed: { tether: ["status"] } },
  {
    name: "several commands",
    body: "@tether /fresh /status",
    addressed: { tether: ["fresh", "status"] },
  },
  {
    name: "a command for a group of agents",
    body: "@tether @review-bot /cancel",
    addressed: { tether: ["cancel"], reviewer: ["cancel"] },
  },
  {
    name: "commands per group",
    body: "@tether /cancel\n@review-bot take over",
    addressed: { tether: ["cancel"], reviewer: [] },
    request: "take over",
  },
  {
    name: "a command with trailing punctuation",
    body: "@tether /fresh.",
    addressed: { tether: ["fresh"] },
    request: "",
  },
  {
    name: "a mid-sentence command is cut from the request",
    body: "Hey @tether /fresh please redo it",
    addressed: { tether: ["fresh"] },
    request: "Hey @tether please redo it",
  },
  {
    name: "a path is not a command",
    body: "@tether /fresh.txt is stale",
    addressed: { tether: [] },
    request: "/fresh.txt is stale",
  },
  {
    name: "an unknown command is request text",
    body: "@tether /deploy now",
    addressed: { tether: [] },
    request: "/deploy now",
  },
  { name: "a command without a mention does nothing", body: "/cancel", addressed: {} },
  {
    name: "a command in code does nothing",
    body: "@tether `/cancel`",
    addressed: { tether: [] },
    request: "`/cancel`",
  },
  {
    name: "a command on the next line is request text",
    body: "@tether\n/status",
    addressed: { tether: [] },
    request: "/status",
  },
];

describe("parseComment", () => {
  it.each(ROWS)("$name", ({ body, addressed, request }) => {
    const parsed = parseComment(body, AGENTS);
    expect(Object.fromEntries(parsed.addressed.map((a) => [a.agent, a.commands]))).toEqual(
      addressed,
    );
    if (request !== undefined) expect(parsed.request).toBe(request);
  });

  it("keeps code in the request as written", () => {
    const body = "@tether why does this fail?\n\n```ts\nconst x = 1;\n```";
    expect(parseComment(body, AGENTS).request).toBe(
      "why does this fail?\n\n```ts\nconst x = 1;\n```",
    );
  });

  it("handles CRLF line endings", () => {
    expect(parseComment("```\r\n@tether\r\n```\r\n@review-bot look\r\n", AGENTS).addressed).toEqual(
      [{ agent: "reviewer", commands: [] }],
    );
  });
});

/**
 * A repository whose own agent `claude` answers to `@tether`, beside `review` on `@tether-review`
 * (the config a user writes first): one mention never reaches the other's agent.
 */
describe("mentions that share a prefix", () => {
  const PREFIXED: AgentMention[] = [
    { agent: "claude", mention: "@tether" },
    { agent: "review", mention: "@tether-review" },
  ];
  it.each<{ body: string; addressed: Record<string, Command[]>; request?: string }>([
    { body: "@tether fix it", addressed: { claude: [] }, request: "fix it" },
    { body: "@tether-review look", addressed: { review: [] }, request: "look" },
    { body: "@TETHER-Review look", addressed: { review: [] } },
    { body: "@tether-review /status", addressed: { review: ["status"] } },
    { body: "@tether /fresh again", addressed: { claude: ["fresh"] }, request: "again" },
    { body: "@tether, @tether-review: both of you", addressed: { claude: [], review: [] } },
    { body: "@tether-review @tether both", addressed: { review: [], claude: [] } },
    { body: "ask @tether-reviewer", addressed: {} },
    { body: "ask @tether-re", addressed: {} },
    { body: "@tether-", addressed: {} },
    { body: "@tether-review-bot hi", addressed: {} },
    { body: "@tether_review hi", addressed: {} },
    { body: "mail tether-review@tether.dev", addressed: {} },
    { body: "`@tether-review` is the reviewer; @tether go", addressed: { claude: [] } },
    { body: "@tether-review.", addressed: { review: [] } },
    { body: "@tether.", addressed: { claude: [] } },
  ])("$body", ({ body, addressed, request }) => {
    const parsed = parseComment(body, PREFIXED);
    expect(Object.fromEntries(parsed.addressed.map((a) => [a.agent, a.commands]))).toEqual(
      addressed,
    );
    if (request !== undefined) expect(parsed.request).toBe(request);
  });

  it("in either order of configuration", () => {
    const reversed = [...PREFIXED].reverse();
    expect(parseComment("@tether-review look", reversed).addressed).toEqual([
      { agent: "review", commands: [] },
    ]);
    expect(parseComment("@tether look", reversed).addressed).toEqual([
      { agent: "claude", commands: [] },
    ]);
  });
});

describe("commands with an argument", () => {
  it.each<{ body: string; addressed: Record<string, Command[]>; args: object; request: string }>([
    {
      body: "@tether /model claude-opus-4-1 try again, harder",
      addressed: { tether: ["model"] },
      args: { tether: { model: "claude-opus-4-1" } },
      request: "try again, harder",
    },
    {
      body: "@tether /model `gpt-5.1`, then fix it",
      addressed: { tether: ["model"] },
      args: { tether: { model: "gpt-5.1" } },
      request: "then fix it",
    },
    {
      body: "@tether /model\nplease",
      addressed: { tether: ["model"] },
      args: { tether: { model: "" } },
      request: "please",
    },
    {
      body: "@tether /model, please",
      addressed: { tether: ["model"] },
      args: { tether: { model: "" } },
      request: "please",
    },
    {
      body: "@tether /fresh /model opus go",
      addressed: { tether: ["fresh", "model"] },
      args: { tether: { model: "opus" } },
      request: "go",
    },
    {
      body: "@tether /resume 1a2b3c4d",
      addressed: { tether: ["resume"] },
      args: { tether: { resume: "1a2b3c4d" } },
      request: "",
    },
    {
      body: "@tether /sessions",
      addressed: { tether: ["sessions"] },
      args: {},
      request: "",
    },
    {
      body: "@review-bot /from tether review what it did",
      addressed: { reviewer: ["from"] },
      args: { reviewer: { from: "tether" } },
      request: "review what it did",
    },
    {
      // A mention as an argument is the argument, not a second agent addressed.
      body: "@review-bot /from @tether review what it did",
      addressed: { reviewer: ["from"] },
      args: { reviewer: { from: "@tether" } },
      request: "review what it did",
    },
    {
      body: "Could @tether /model opus look?",
      addressed: { tether: ["model"] },
      args: { tether: { model: "opus" } },
      request: "Could @tether look?",
    },
    {
      body: "`@tether /model opus` is how",
      addressed: {},
      args: {},
      request: "`@tether /model opus` is how",
    },
  ])("$body", ({ body, addressed, args, request }) => {
    const parsed = parseComment(body, AGENTS);
    expect(Object.fromEntries(parsed.addressed.map((a) => [a.agent, a.commands]))).toEqual(
      addressed,
    );
    expect(
      Object.fromEntries(parsed.addressed.filter((a) => a.args).map((a) => [a.agent, a.args])),
    ).toEqual(args);
    expect(parsed.request).toBe(request);
  });
});

describe("mentionedNames", () => {
  it.each([
    ["@Alice and @bob-2 and @tether", ["alice", "bob-2", "tether"]],
    ["`@alice`\n> @bob", []],
    ["> @alice\n\nhey @bob", ["bob"]],
    ["me@example.com", []],
    ["", []],
  ])("%j → %j", (body, names) => {
    expect(mentionedNames(body)).toEqual(names);
  });
});

describe("edits: what an edit newly asks of agents", () => {
  it.each([
    {
      name: "a mistyped mention, fixed",
      before: "@tethr fix the build",
      after: "@tether fix the build",
      added: ["tether"],
      addressed: { tether: [] },
    },
    {
      name: "a mention added to a comment that had none",
      before: "The build is broken",
      after: "The build is broken. @tether /fresh can you look?",
      added: ["tether"],
      addressed: { tether: ["fresh"] },
    },
    {
      name: "a typo fixed in a request that already addressed the agent",
      before: "@tether fix teh build",
      after: "@tether fix the build",
      added: [],
      addressed: {},
    },
    {
      name: "a second agent added: only it is new",
      before: "@tether fix it",
      after: "@tether @review-bot fix it",
      added: ["review-bot"],
      addressed: { reviewer: [] },
    },
    {
      name: "the same agent mentioned again, differently cased",
      before: "@tether go",
      after: "@tether go\n\n@TETHER really",
      added: [],
      addressed: {},
    },
    {
      name: "a mention taken out of a code span",
      before: "`@tether` fix it",
      after: "@tether fix it",
      added: ["tether"],
      addressed: { tether: [] },
    },
    {
      name: "a mention moved into a quote: nothing new",
      before: "thanks",
      after: "> @tether said so",
      added: [],
      addressed: {},
    },
    {
      name: "someone who is not an agent: a new name, but no agent",
      before: "hi",
      after: "hi @alice",
      added: ["alice"],
      addressed: {},
    },
    {
      name: "an agent mentioned before and now with a command: not a new request",
      before: "@tether fix it",
      after: "@tether /cancel",
      added: [],
      addressed: {},
    },
  ])("$name", ({ before, after, added, addressed }) => {
    expect(addedMentionNames(before, after)).toEqual(added);
    expect(
      Object.fromEntries(newlyAddressed(before, after, AGENTS).map((a) => [a.agent, a.commands])),
    ).toEqual(addressed);
  });
});
