/**
 * The floors of src/: imports run downward only. `core/` imports nothing of src/; every other
 * room of src/ (each folder and top-level file, read from the directory, but for app.ts, main.ts
 * and deps.ts, which assemble the top) never imports the runner, intake or the web; intake never
 * imports the runner. No CLI's folder imports another's: what two share of a model API is the
 * provider's (providers/), which imports no CLI. The registry of CLIs (cli-registry.ts) sits above
 * them: nothing a CLI stands on imports it, and sql/ imports no CLI (the CLIs' facts reach the
 * config and the queries as data). Inside the runner, too: wiring/ builds loop/, the loop runs
 * turn/, a turn uses render/, and all of them speak through ports.ts; a turn reads and writes
 * Postgres through its store's ports (core/), never sql/ or db/. And the
 * folder map (docs/development.md) names every folder of src/, and only those.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(import.meta.dirname, "../../src");
const DEVELOPMENT = fs.readFileSync(path.resolve(SRC, "../docs/development.md"), "utf8");

/** Every .ts file under src/, relative to it. */
function sources(dir = SRC): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") ? [path.relative(SRC, p)] : [];
  });
}

/** The src/-relative files a source file imports (relative specifiers only). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(SRC, file), "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)[^"'`;]*?from\s*["'](\.[^"']+)["']/g))
    out.push(path.relative(SRC, path.resolve(SRC, path.dirname(file), m[1]!)));
  return out;
}

const room = (file: string) => (file.includes("/") ? file.split("/")[0]! : file);
const HIGH = new Set(["runner", "intake", "web"]);
/** Every room of src/ (folders and top-level files), read from the directory: a new one is covered. */
const ROOMS = fs
  .readdirSync(SRC, { withFileTypes: true })
  .filter((e) => e.isDirectory() || e.name.endsWith(".ts"))
  .map((e) => e.name);
/** The top: the runner, intake and the web, the two files that assemble them, and deps.ts (what the web is handed). */
const TOP = new Set([...HIGH, "app.ts", "main.ts", "deps.ts"]);
const BELOW_RUNNER = ROOMS.filter((r) => !TOP.has(r));
/** The CLIs' folders: those the registry takes an entry from, so a new CLI is covered. */
const CLIS = importsOf("cli-registry.ts")
  .filter((f) => f.endsWith("/entry.js"))
  .map(room);

describe("the floors of src/", () => {
  const files = sources();
  const edges = files.flatMap((f) => importsOf(f).map((to) => ({ from: f, to })));

  it("reads the imports it judges (a parser that found none would pass anything)", () => {
    expect(files.length).toBeGreaterThan(50);
    expect(edges.length).toBeGreaterThan(200);
    expect(edges).toContainEqual({ from: "log.ts", to: "core/redact.js" });
  });

  it("core/ imports nothing outside core/", () => {
    const out = edges.filter((e) => room(e.from) === "core" && room(e.to) !== "core");
    expect(out).toEqual([]);
  });

  it("nothing below the runner imports the runner, intake or the web", () => {
    expect(BELOW_RUNNER).toEqual(expect.arrayContaining(["gemini", "opencode", "review", "sql"]));
    const up = edges.filter((e) => BELOW_RUNNER.includes(room(e.from)) && HIGH.has(room(e.to)));
    expect(up).toEqual([]);
  });

  it("no CLI's folder imports another's, and providers/ (what they share) imports none", () => {
    expect(CLIS).toEqual(expect.arrayContaining(["claude", "codex", "gemini", "opencode"]));
    const across = edges.filter(
      (e) =>
        CLIS.includes(room(e.to)) &&
        room(e.from) !== room(e.to) &&
        (CLIS.includes(room(e.from)) || room(e.from) === "providers"),
    );
    expect(across).toEqual([]);
  });

  it("the registry sits above the CLIs: nothing they stand on imports it, and sql/ imports no CLI", () => {
    // The rooms at or below the CLIs' floor: the CLIs' folders and whatever they import, through
    // any number of rooms (so config/, core/ and agent-cli/ are in it), and sql/, which the
    // registry hands the CLIs' names as data (#43).
    const under = new Set([...CLIS, "sql"]);
    for (let grew = true; grew;) {
      grew = false;
      for (const e of edges)
        if (under.has(room(e.from)) && !under.has(room(e.to))) {
          under.add(room(e.to));
          grew = true;
        }
    }
    expect([...under]).toEqual(expect.arrayContaining(["agent-cli", "config", "core", "sql"]));
    expect(under.has("cli-registry.ts") || under.has("cli-registry.js")).toBe(false);
    const registry = edges.filter(
      (e) => under.has(room(e.from)) && room(e.to).startsWith("cli-registry."),
    );
    expect(registry).toEqual([]);
    const sqlToCli = edges.filter((e) => room(e.from) === "sql" && CLIS.includes(room(e.to)));
    expect(sqlToCli).toEqual([]);
  });

  it("intake does not import the runner", () => {
    const up = edges.filter((e) => room(e.from) === "intake" && room(e.to) === "runner");
    expect(up).toEqual([]);
  });

  it("inside the runner, imports run down: wiring/, loop/, turn/, render/, then ports.ts", () => {
    const floors = ["runner/wiring", "runner/loop", "runner/turn", "runner/render", "runner/ports"];
    const floor = (file: string) => floors.findIndex((f) => file.startsWith(f));
    const inRunner = edges.filter((e) => room(e.from) === "runner" && room(e.to) === "runner");
    expect(inRunner.length).toBeGreaterThan(20);
    expect(inRunner.filter((e) => floor(e.from) === -1 || floor(e.to) === -1)).toEqual([]);
    expect(inRunner.filter((e) => floor(e.to) < floor(e.from))).toEqual([]);
  });

  it("a turn (runner/turn/, runner/render/) reaches Postgres only through its store (core/turn-journal.ts)", () => {
    const turn = edges.filter(
      (e) => e.from.startsWith("runner/turn/") || e.from.startsWith("runner/render/"),
    );
    expect(turn.length).toBeGreaterThan(20);
    expect(turn.filter((e) => room(e.to) === "sql" || room(e.to) === "db")).toEqual([]);
  });

  it("docs/development.md's folder map names every folder of src/, and only those", () => {
    const folders = fs
      .readdirSync(SRC, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `${e.name}/`)
      .sort();
    const start = DEVELOPMENT.indexOf("The source, one line per folder of `src/`");
    expect(start).toBeGreaterThan(-1);
    const table = DEVELOPMENT.slice(start).split("\n\n")[1]!;
    const mapped = [...table.matchAll(/^\| `([a-z-]+\/)` /gm)].map((m) => m[1]!).sort();
    expect(mapped).toEqual(folders);
  });
});
