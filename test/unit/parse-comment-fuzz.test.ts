import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { COMMANDS, parseComment, type AgentMention } from "../../src/intake/parse-comment.js";

const AGENTS: AgentMention[] = [
  { agent: "tether", mention: "@tether" },
  { agent: "reviewer", mention: "@reviewer" },
];

/** Pieces of Markdown that the parser treats specially, mixed with plain words. */
const TOKENS = [
  "@tether",
  "@reviewer",
  "@alice",
  "@",
  "/fresh",
  "/cancel",
  "/status",
  "/help",
  "/model",
  "/resume",
  "/sessions",
  "/from",
  "claude-opus-4-1",
  " ",
  "  ",
  "\t",
  "\n",
  "\n\n",
  "\r\n",
  "`",
  "``",
  "```",
  "~~~",
  "    ",
  "> ",
  ">",
  "<!--",
  "-->",
  "- ",
  "1. ",
  "\\",
  ".",
  ",",
  ":",
  "word",
  "x@y",
  "é",
  "🙂",
];
const soup = fc.array(fc.constantFrom(...TOKENS), { maxLength: 60 }).map((t) => t.join(""));
const NO_CODE_TOKENS = TOKENS.filter((t) => !/[`\n\r]|<!--|-->/.test(t));
const line = fc.array(fc.constantFrom(...NO_CODE_TOKENS), { maxLength: 30 }).map((t) => t.join(""));

const agentNames = new Set(AGENTS.map((a) => a.agent));
const commandNames = new Set<string>(COMMANDS);

describe("parseComment, properties", () => {
  it("never throws and only reports configured agents and known commands", () => {
    fc.assert(
      fc.property(fc.oneof(soup, fc.string({ unit: "grapheme", maxLength: 200 })), (body) => {
        const parsed = parseComment(body, AGENTS);
        for (const a of parsed.addressed) {
          expect(agentNames.has(a.agent)).toBe(true);
          for (const c of a.commands) expect(commandNames.has(c)).toBe(true);
          // An argument belongs to a command given, and is one word of the body.
          for (const [c, v] of Object.entries(a.args ?? {})) {
            expect(a.commands).toContain(c);
            expect(v).not.toMatch(/\s/);
            expect(body).toContain(v);
          }
        }
        expect(parsed.request.length).toBeLessThanOrEqual(body.length);
        expect(new Set(parsed.addressed.map((a) => a.agent)).size).toBe(parsed.addressed.length);
      }),
      { numRuns: 2000 },
    );
  });

  it("addresses no one when the whole body sits in a fenced code block", () => {
    fc.assert(
      fc.property(soup, (body) => {
        const longest = Math.max(0, ...(body.match(/~+/g) ?? []).map((r) => r.length));
        const fence = "~".repeat(Math.max(3, longest + 1));
        expect(parseComment(`${fence}\n${body}\n${fence}`, AGENTS).addressed).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it("addresses no one when every line is quoted", () => {
    fc.assert(
      fc.property(soup, (body) => {
        const quoted = body
          .split("\n")
          .map((l) => `> ${l}`)
          .join("\n");
        expect(parseComment(quoted, AGENTS).addressed).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it("addresses no one inside an inline code span", () => {
    fc.assert(
      fc.property(line, line, (before, inside) => {
        // Only the span's content is checked: text before it may itself address someone.
        const parsed = parseComment(`x ${before.replace(/@/g, "")} \`${inside}\``, AGENTS);
        expect(parsed.addressed).toEqual([]);
      }),
      { numRuns: 1000 },
    );
  });

  it("addresses the agent a plain first line starts with", () => {
    fc.assert(
      fc.property(line, (rest) => {
        const parsed = parseComment(`@tether ${rest}`, AGENTS);
        expect(parsed.addressed[0]?.agent).toBe("tether");
      }),
      { numRuns: 1000 },
    );
  });
});

describe("parseComment, bounded time on 1 MB", () => {
  const MB = 1 << 20;
  const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
  const inputs: Array<[string, string]> = [
    ["backticks", fill("`")],
    ["unmatched backtick pairs", fill("`a")],
    ["mixed backtick runs", fill("``a`b```c\n")],
    ["mentions", fill("@tether ")],
    ["mentions and words", fill("@tether x ")],
    ["mention groups with commands", fill("@tether @reviewer /fresh /status ")],
    ["argument commands", fill("@tether /model x /resume ab /from @reviewer ")],
    ["an argument command before a long word", `@tether /model ${fill("a")}`],
    ["at signs", fill("@")],
    ["fence lines", fill("```\n")],
    ["fences with text", fill("~~~\n@tether\n")],
    ["quotes", fill("> @tether\n")],
    ["HTML comment openers", fill("<!--a\n\n")],
    ["inline HTML comment openers", fill("x <!-- y\n\n")],
    ["paragraphs with a backtick", fill("a `b\n\n")],
    ["indented lines", fill("    @tether\n\n")],
    ["one long line", fill("word ")],
    ["newlines", fill("\n")],
  ];

  it.each(inputs)("%s", (_name, body) => {
    const started = performance.now();
    const parsed = parseComment(body, AGENTS);
    const ms = performance.now() - started;
    expect(parsed.request.length).toBeLessThanOrEqual(body.length);
    // Linear work is tens of milliseconds here; a quadratic scan would take minutes.
    expect(ms).toBeLessThan(3000);
  });

  it("random Markdown soup, repeated to 1 MB", () => {
    fc.assert(
      fc.property(
        soup.filter((s) => s.length > 0),
        (unit) => {
          const body = fill(unit);
          const started = performance.now();
          parseComment(body, AGENTS);
          expect(performance.now() - started).toBeLessThan(3000);
        },
      ),
      { numRuns: 15 },
    );
  });
});
