/**
 * Comment webhook → CLI spawn latency, end to end: the built app as a process, real Postgres,
 * the GitHub stand-in over HTTP (REST and git), and a stand-in CLI that notes when it was
 * spawned. One comment at a time (no queueing), so each figure is the path itself: the webhook
 * into the inbox, the intake processor (token, config, permission, 👀), the task and its
 * NOTIFY, the runner's claim, the decision, the tracking comment, the workspace (clone on a
 * first turn, fetch on a follow-up), the prompt, and the spawn.
 *
 * Two apps run side by side, each with its own database and stand-ins: one runs agents in the
 * sandbox (TETHER_SANDBOX=bwrap, the default), the other unsandboxed (off). Their turns are
 * interleaved, each round in alternating order, so the sandbox's cost is read from medians taken
 * in one run under the same load.
 *
 *   npx tsx bench/turn-latency.ts [turns=20] [--phases]
 *
 * --phases runs the app at LOG_LEVEL=debug (a little slower) and also prints, per kind of turn,
 * the median time from the webhook to each step the app logs: where the time goes.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPool } from "../src/db/pool.js";
import { startStack, REPO, type Stack } from "../test/helpers/e2e-stack.js";
import { benchDatabase, percentile } from "./support.js";

const args = process.argv.slice(2);
const phases = args.includes("--phases");
const turns = Number(args.find((a) => /^\d+$/.test(a)) ?? 20);
const ROOT = path.resolve(import.meta.dirname, "..");
if (!fs.existsSync(path.join(ROOT, "dist/src/main.js")) || process.env.BENCH_BUILD !== "0") {
  console.log("building dist (npm run build) …");
  execFileSync("npx", ["tsc", "-p", "tsconfig.build.json"], { cwd: ROOT, stdio: "inherit" });
}

interface Arm {
  name: string;
  stack: Stack;
  spawnLog: string;
  first: number[];
  follow: number[];
  steps: { first: Map<string, number[]>; follow: Map<string, number[]> };
  close(): Promise<void>;
}

async function startArm(name: string, env: Record<string, string>): Promise<Arm> {
  const db = await benchDatabase();
  const pool = createPool(db.url);
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-lat-"));
  const spawnLog = path.join(logDir, "spawns.log");
  fs.writeFileSync(spawnLog, "");
  const stack = await startStack({
    pool,
    databaseUrl: db.url,
    env: {
      TETHER_CLAUDE_PATH: path.join(ROOT, "bench/fake-claude-spawn.sh"),
      CLAUDE_CODE_BENCH_SPAWN_LOG: spawnLog,
      // The stand-in notes its spawn in this directory, from inside the sandbox too.
      TETHER_SANDBOX_BIND: `${logDir}:rw`,
      LOG_LEVEL: phases ? "debug" : "warn",
      ...env,
    },
  });
  return {
    name,
    stack,
    spawnLog,
    first: [],
    follow: [],
    steps: { first: new Map(), follow: new Map() },
    async close() {
      await stack.close();
      await pool.end();
      await db.cleanup();
      fs.rmSync(logDir, { recursive: true, force: true });
    },
  };
}

function spawnsSoFar(arm: Arm): number[] {
  return fs
    .readFileSync(arm.spawnLog, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => Number(l.split(" ")[0]));
}

/** Log lines that mark a step on the way to the spawn, in order. */
const STEPS: Array<[string, RegExp]> = [
  ["webhook stored", /^webhook taken$/],
  ["task queued", /^comment queued$/],
  ["decision taken", /^resume decision$/],
  ["workspace ready", /^workspace /],
  ["CLI spawned", /^claude started$/],
];

async function oneTurn(
  arm: Arm,
  issueNumber: number,
  body: string,
  kind?: "first" | "follow",
): Promise<number> {
  const { stack } = arm;
  const before = spawnsSoFar(arm).length;
  const outBefore = stack.app.output().length;
  const t0 = Date.now();
  const commentId = await stack.comment(issueNumber, body);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const spawns = spawnsSoFar(arm);
    if (spawns.length > before) {
      await stack.finishedTask(commentId);
      if (phases && kind) noteSteps(stack.app.output().slice(outBefore), t0, arm.steps[kind]);
      return spawns[before]! - t0;
    }
    if (Date.now() > deadline)
      throw new Error(`no spawn for comment ${commentId}:\n${stack.app.output().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** The first time each step was logged in this turn's output, relative to the webhook. */
function noteSteps(output: string, t0: number, into: Map<string, number[]>): void {
  const seen = new Map<string, number>();
  for (const line of output.split("\n")) {
    let entry: { msg?: unknown; time?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue; // not a log line
    }
    const msg = entry.msg;
    const step = STEPS.find(([, re]) => typeof msg === "string" && re.test(msg));
    if (step && typeof entry.time === "number" && !seen.has(step[0]))
      seen.set(step[0], entry.time - t0);
  }
  for (const [name, ms] of seen) into.set(name, [...(into.get(name) ?? []), ms]);
}

const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

const arms = [
  await startArm("sandboxed (bwrap)", {}),
  await startArm("unsandboxed (off)", { TETHER_SANDBOX: "off" }),
];
try {
  // Warm-up: the first turn after start pays for JIT and connection set-up.
  for (const arm of arms) {
    const warm = arm.stack.gh.addIssue({ repo: REPO, title: "warm-up", body: "-", user: "alice" });
    await oneTurn(arm, warm.number as number, "@tether warm up");
  }
  for (let i = 0; i < turns; i++) {
    for (const arm of i % 2 ? [...arms].reverse() : arms) {
      const issue = arm.stack.gh.addIssue({
        repo: REPO,
        title: `latency ${i}`,
        body: "Measure me.",
        user: "alice",
      });
      arm.first.push(
        await oneTurn(arm, issue.number as number, `@tether first turn ${i}`, "first"),
      );
      arm.follow.push(
        await oneTurn(arm, issue.number as number, `@tether follow-up ${i}`, "follow"),
      );
    }
  }
  const show = (name: string, xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    console.log(
      `  ${name.padEnd(32)} n=${s.length}  p50 ${percentile(s, 50)} ms  p99 ${percentile(s, 99)} ms  min ${s[0]} ms  max ${s[s.length - 1]} ms`,
    );
  };
  console.log("\ncomment webhook → CLI spawn (one comment at a time, the two apps interleaved)");
  for (const arm of arms) {
    console.log(arm.name);
    show("first turn (clone)", arm.first);
    show("follow-up (fetch, resume)", arm.follow);
    show("all", [...arm.first, ...arm.follow]);
  }
  const [sb, off] = arms as [Arm, Arm];
  const all = (a: Arm) => [...a.first, ...a.follow];
  console.log("\nthe sandbox's cost (difference of medians)");
  for (const [label, pick] of [
    ["first turn", (a: Arm) => a.first],
    ["follow-up", (a: Arm) => a.follow],
    ["all", all],
  ] as const) {
    const d = median(pick(sb)) - median(pick(off));
    console.log(
      `  ${label.padEnd(12)} +${d} ms  (${median(pick(sb))} vs ${median(pick(off))} ms, ×${(median(pick(sb)) / median(pick(off))).toFixed(2)})`,
    );
  }
  console.log("targets: p50 ≤ 100 ms, p99 ≤ 300 ms; the sandbox adds ≤ 50 ms to the median");
  if (phases) {
    for (const arm of arms) {
      console.log(`\n${arm.name}: median ms from the webhook to each step (LOG_LEVEL=debug)`);
      console.log(`${"step".padEnd(18)} ${"first turn".padStart(11)} ${"follow-up".padStart(10)}`);
      for (const [name] of STEPS) {
        const med = (xs: number[] | undefined) => (xs?.length ? String(median(xs)) : "-");
        console.log(
          `${name.padEnd(18)} ${med(arm.steps.first.get(name)).padStart(11)} ${med(arm.steps.follow.get(name)).padStart(10)}`,
        );
      }
    }
  }
} finally {
  for (const arm of arms) await arm.close();
}
