/**
 * Issue #31: the registry of agent CLIs (src/cli-registry.ts) is the only place in src/ outside
 * the CLIs' own folders (src/<name>/, one per registered CLI) and the model providers'
 * (src/providers/, whose models bear the names) that names a CLI. Everything else
 * asks the registry: the config's `cli:` values, the claim's version map, stats and metrics
 * labels, the runner's wiring, the secret and environment lists, the pull request masks. A name
 * in the code elsewhere (an identifier, a string, a file name) is how a third CLI came to be
 * silently counted as the first one, so this test reads the code of every other file, comments
 * left out (prose may say what a CLI does), and fails on any of the names.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AGENT_CLIS } from "../../src/cli-registry.js";

const SRC = path.resolve(import.meta.dirname, "../../src");

/** The CLIs Tether runs or is being taught to run: their names must not appear in other code. */
const WORDS = /claude|codex|gemini|opencode/gi;

/**
 * Hits that are not a CLI named as one: each file, the exact text, and why. Keep it short; a
 * line here is a line someone must defend.
 */
const ALLOWED: Array<{ file: string; text: string; why: string }> = [
  {
    file: "workspace/project-instructions.ts",
    text: "CLAUDE.md",
    why: "the repository's instructions file Tether itself reads for every agent (projectInstructions), not a CLI's",
  },
];

/** Every source file under src/, relative to it. */
function sources(dir = SRC): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.(ts|js|mjs)$/.test(e.name) ? [path.relative(SRC, p)] : [];
  });
}

/**
 * The code of a file with its comments blanked (newlines kept, so lines still count). Strings
 * and template literals are kept: a CLI's name in a string is code too.
 */
export function withoutComments(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === "/" && next === "/") {
      while (i < text.length && text[i] !== "\n") i++;
      continue;
    }
    if (c === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      const stop = end === -1 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop;
      continue;
    }
    if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < text.length && text[j] !== c) {
        if (text[j] === "\\") j++;
        else if (c !== "`" && text[j] === "\n") break;
        j++;
      }
      out += text.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

interface Hit {
  file: string;
  line: number;
  text: string;
}

function hitsIn(file: string): Hit[] {
  const code = withoutComments(fs.readFileSync(path.join(SRC, file), "utf8"));
  const hits: Hit[] = [];
  code.split("\n").forEach((line, i) => {
    for (const m of line.matchAll(WORDS)) {
      const allowed = ALLOWED.some(
        (a) =>
          a.file === file &&
          line
            .slice(m.index)
            .toLowerCase()
            .startsWith(a.text.toLowerCase().slice(0, m[0].length)) &&
          line.includes(a.text),
      );
      if (!allowed) hits.push({ file, line: i + 1, text: line.trim() });
    }
  });
  return hits;
}

/**
 * Folders that may use the names although no CLI's: providers/ (#43) holds the model APIs' facts,
 * and the providers name their models after the words (`claude-opus-4`, `gemini-2.5-pro`) and
 * take Claude Code's token variable; it imports no CLI's folder (test/repo/layers.test.ts).
 */
const PROVIDERS = "providers";

describe("only the registry, the CLIs' own folders and the providers name a CLI (#31)", () => {
  const own = new Set([...AGENT_CLIS.map((c) => c.name), PROVIDERS]);
  const judged = sources().filter(
    (f) => f !== "cli-registry.ts" && !(f.includes("/") && own.has(f.split("/")[0]!)),
  );

  it("reads the files it judges, comments left out but strings kept", () => {
    expect(judged.length).toBeGreaterThan(100);
    expect(judged).toContain("runner/wiring/start-runner.ts");
    expect(judged).toContain("agent-cli/cli-run.ts");
    expect(judged).not.toContain("claude/claude-cli.ts");
    expect(judged).not.toContain("providers/anthropic/pricing.ts");
    const sample = 'const a = "claude"; // codex\n/* gemini */ const b = `x${"opencode"}`;';
    expect(withoutComments(sample).match(WORDS)).toEqual(["claude", "opencode"]);
  });

  it("finds a name where one is (the test would pass on anything otherwise)", () => {
    const tmp = path.join(SRC, "..", "test", "repo");
    expect(withoutComments(fs.readFileSync(path.join(tmp, "cli-names.test.ts"), "utf8"))).toMatch(
      WORDS,
    );
  });

  it("no other file of src/ names a CLI in its code", () => {
    const hits = judged.flatMap(hitsIn);
    expect(hits.map((h) => `${h.file}:${h.line}: ${h.text}`)).toEqual([]);
  });

  it("every allowed hit is still there (a stale allowance hides nothing, so it goes)", () => {
    for (const a of ALLOWED) {
      const code = withoutComments(fs.readFileSync(path.join(SRC, a.file), "utf8"));
      expect(code, `${a.file}: ${a.why}`).toContain(a.text);
    }
  });
});
