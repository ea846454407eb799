/**
 * Comment webhook → CLI spawn latency, end to end: the built app as a process, real Postgres,
 * the GitHub stand-in over HTTP (REST and git), and a stand-in CLI that notes when it was
 * spawned. One comment at a time (no queueing), so each figure is the path itself: the webhook
 * into the inbox, the intake processor (token, config, permission, 👀), the task and its
 * NOTIFY, the runner's claim, the decision, the tracking comment, the workspace (clone on a
 * first turn; on a follow-up, a fetch unless GitHub's REST API says the turn's branches are as
 * the mirror has them; and the look at the checkout that housekeeping took after the last turn),
 * the prompt, and the spawn.
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
 *
 * Besides the spawn it reports what a person sees first, from the requests the GitHub stand-in
 * recorded: comment → 👀 (the reaction's POST arriving) and comment → the tracking comment (its
 * POST arriving). It splits each turn's time into GitHub's part and Tether's: GitHub's is the
 * time the stand-in spent answering the requests the turn waited for before its spawn (the
 * union of their time in flight, from arrival to the response's end; the 👀 and the tracking
 * comment, which the turn does not wait for, are left out), and the rest is Tether's own,
 * printed with the requests a follow-up waited for. And, interleaved with the turns, a bare
 * `git fetch` of the same repository with no Tether at all (the stand-in runs `git
 * http-backend` per request): what a follow-up would pay when it must fetch.
 * The stand-in CLI writes a transcript where the real one does, so follow-ups really resume.
 *
 * It also times, once a round, two yardsticks of the machine itself, with no Tether at all: a
 * process spawned from Node.js (`/bin/true`) and bubblewrap starting `/bin/true` in a bare
 * sandbox. Machines of the same kind (2 cores) differ a lot in speed from day to day; figures
 * taken on different days compare only beside their yardsticks.
 *
 * BENCH_DUMP=<file> appends, for every follow-up, the stand-in's requests and the app's log
 * lines, each with its time from the webhook: where one turn's time went.
 */
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createPool } from "../src/db/pool.js";
import { gitAuthEnv } from "../src/github/git-auth.js";
import { startStack, REPO, type Stack } from "../test/helpers/e2e-stack.js";
import type { RecordedRequest } from "../test/helpers/fake-github.js";
import { benchDatabase, percentile } from "./support.js";

const args = process.argv.slice(2);
const phases = args.includes("--phases");
const turns = Number(args.find((a) => /^\d+$/.test(a)) ?? 20);
const ROOT = path.resolve(import.meta.dirname, "..");
if (!fs.existsSync(path.join(ROOT, "dist/src/main.js")) || process.env.BENCH_BUILD !== "0") {
  console.log("building dist (npm run build) …");
  execFileSync("npm", ["run", "--silent", "build"], { cwd: ROOT, stdio: "inherit" });
}

interface Arm {
  name: string;
  stack: Stack;
  spawnLog: string;
  first: number[];
  follow: number[];
  /**
   * Per turn: how much of webhook → spawn GitHub's stand-in spent answering requests the app
   * waited for (the union of their time in flight), and which requests those were.
   */
  github: { first: number[]; follow: number[]; routes: Map<string, number[]> };
  /** comment → 👀 and comment → tracking comment, ms, every turn. */
  eyes: number[];
  tracking: number[];
  /** A bare `git fetch` against this arm's stand-in, ms, once a round. */
  bareFetch: number[];
  /** What the app logged the workspace's git steps took (--phases): host fetch, sandboxed look. */
  gitMs: {
    mirrorFetch: number[];
    sandboxLook: number[];
    skipped: number;
    /** Follow-ups whose workspace used the look taken after the last turn (no look of their own). */
    reused: number;
    turns: number;
  };
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
    github: { first: [], follow: [], routes: new Map() },
    eyes: [],
    tracking: [],
    bareFetch: [],
    gitMs: { mirrorFetch: [], sandboxLook: [], skipped: 0, reused: 0, turns: 0 },
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
  const ghBefore = stack.gh.requests.length;
  const commentId = await stack.comment(issueNumber, body);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const spawns = spawnsSoFar(arm);
    if (spawns.length > before) {
      await stack.finishedTask(commentId);
      const spawnedAt = spawns[before]!;
      if (kind) {
        const seen = stack.gh.requests.slice(ghBefore);
        const waited = onPath(seen, spawnedAt);
        arm.github[kind].push(unionMs(waited, t0, spawnedAt));
        if (kind === "follow")
          for (const r of waited) {
            const name = `${r.method} ${r.route ?? r.kind}`;
            arm.github.routes.set(name, [...(arm.github.routes.get(name) ?? []), r.doneAt! - r.at]);
          }
        const eyes = seen.find(
          (r) => r.method === "POST" && r.path.endsWith(`/issues/comments/${commentId}/reactions`),
        );
        const tracking = seen.find(
          (r) => r.method === "POST" && r.path.endsWith(`/issues/${issueNumber}/comments`),
        );
        if (eyes) arm.eyes.push(eyes.at - t0);
        if (tracking) arm.tracking.push(tracking.at - t0);
      }
      if (phases && kind) {
        const out = stack.app.output().slice(outBefore);
        noteSteps(out, t0, arm.steps[kind]);
        if (kind === "follow") noteGit(out, arm.gitMs);
        if (kind === "follow" && process.env.BENCH_DUMP)
          fs.appendFileSync(
            process.env.BENCH_DUMP,
            `--- ${arm.name}\n` +
              stack.gh.requests
                .slice(ghBefore)
                .map((r) => `  gh ${r.at - t0}..${(r.doneAt ?? NaN) - t0} ${r.method} ${r.path}\n`)
                .join("") +
              out
                .split("\n")
                .map((l) => {
                  try {
                    const e = JSON.parse(l) as { time: number; msg: string; component?: string };
                    return `${String(e.time - t0).padStart(5)} ${e.component ?? ""} ${e.msg} ${l.length > 300 ? "" : l}`;
                  } catch {
                    return "";
                  }
                })
                .filter(Boolean)
                .join("\n") +
              "\n",
          );
      }
      return spawnedAt - t0;
    }
    if (Date.now() > deadline)
      throw new Error(`no spawn for comment ${commentId}:\n${stack.app.output().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * The stand-in's requests a turn waits for before its spawn: everything that arrived before the
 * spawn except what the app sends without waiting (the 👀 reaction, the tracking comment).
 */
function onPath(seen: RecordedRequest[], spawnedAt: number): RecordedRequest[] {
  return seen.filter(
    (r) =>
      r.at <= spawnedAt &&
      r.doneAt !== undefined &&
      !(r.method === "POST" && /\/reactions$/.test(r.path)) &&
      !(/^(POST|PATCH)$/.test(r.method) && /\/issues\/(\d+\/)?comments(\/\d+)?$/.test(r.path)),
  );
}

/** Time within [from, to] during which at least one of the requests was being answered. */
function unionMs(reqs: RecordedRequest[], from: number, to: number): number {
  const spans = reqs
    .map((r) => [Math.max(from, r.at), Math.min(to, r.doneAt!)] as const)
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  let total = 0;
  let end = -Infinity;
  for (const [a, b] of spans) {
    if (b <= end) continue;
    total += b - Math.max(a, end);
    end = b;
  }
  return total;
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

/** How long the workspace's git steps took, as the app logged them (debug). */
function noteGit(output: string, into: Arm["gitMs"]): void {
  into.turns += 1;
  if (output.includes("fetch skipped")) into.skipped += 1;
  if (output.includes("checkout as the last turn left it")) into.reused += 1;
  for (const line of output.split("\n")) {
    let e: { msg?: unknown; ms?: unknown; git?: unknown; step?: unknown };
    try {
      e = JSON.parse(line) as typeof e;
    } catch {
      continue;
    }
    // Up to the workspace's readiness: what runs after the turn (housekeeping, the look for
    // the next turn) is not on this turn's path.
    if (typeof e.msg === "string" && /^workspace /.test(e.msg)) break;
    if (typeof e.ms !== "number") continue;
    if (e.msg === "git" && Array.isArray(e.git) && e.git[0] === "fetch")
      into.mirrorFetch.push(e.ms);
    if (e.msg === "git in the workspace" && e.step === "main") into.sandboxLook.push(e.ms);
  }
}

/** Wall time of one child process, ms (asynchronous: the stand-in serves from this process). */
function timeProcess(
  file: string,
  argv: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<number> {
  return new Promise((resolve, reject) => {
    const t = performance.now();
    execFile(
      file,
      argv,
      { env: opts.env ?? { PATH: process.env.PATH ?? "/usr/bin:/bin" }, cwd: opts.cwd },
      (err) => (err ? reject(err) : resolve(Math.round(performance.now() - t))),
    );
  });
}

/**
 * The stand-in's own cost: a bare mirror of the repository made once, then one `git fetch`
 * into it (what the runner's mirror fetch asks, with nothing new), timed. Asynchronous: the
 * stand-in serves from this process.
 */
async function standInFetcher(stack: Stack): Promise<() => Promise<number>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-lat-git-"));
  const { GHE_PROTOCOL, GHE_HOST } = stack.gh.appEnv("unused");
  const url = `${GHE_PROTOCOL}://${GHE_HOST}/${REPO}.git`;
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: dir,
    LC_ALL: "C",
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    ...gitAuthEnv(url, stack.gh.createInstallationToken()),
  };
  const git = (args: string[], cwd: string) =>
    timeProcess("git", ["-c", "maintenance.auto=false", "-c", "gc.auto=0", ...args], { env, cwd });
  await git(["clone", "--bare", "--quiet", "--no-tags", "--", url, "m.git"], dir);
  const mirror = path.join(dir, "m.git");
  return () =>
    git(
      [
        "fetch",
        "--quiet",
        "--prune",
        "--no-tags",
        "--no-recurse-submodules",
        "--",
        url,
        "+refs/heads/*:refs/heads/*",
      ],
      mirror,
    );
}

/** The machine's yardsticks: a bare spawn, and bubblewrap starting a process in a bare sandbox. */
const yardsticks = { spawn: [] as number[], bwrap: [] as number[] };
async function timeYardsticks(): Promise<void> {
  yardsticks.spawn.push(await timeProcess("/bin/true", []));
  yardsticks.bwrap.push(
    await timeProcess("bwrap", [
      "--ro-bind",
      "/usr",
      "/usr",
      "--symlink",
      "usr/lib",
      "/lib",
      "--symlink",
      "usr/lib64",
      "/lib64",
      "--symlink",
      "usr/bin",
      "/bin",
      "--proc",
      "/proc",
      "--dev",
      "/dev",
      "--unshare-all",
      "--die-with-parent",
      "/bin/true",
    ]),
  );
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
  const bareFetch = new Map<Arm, () => Promise<number>>();
  for (const arm of arms) bareFetch.set(arm, await standInFetcher(arm.stack));
  for (let i = 0; i < turns; i++) {
    for (const arm of i % 2 ? [...arms].reverse() : arms) {
      arm.bareFetch.push(await bareFetch.get(arm)!());
      await timeYardsticks();
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
    show("follow-up (warm, resume)", arm.follow);
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
      `  ${label.padEnd(12)} ${d >= 0 ? "+" : ""}${d} ms  (${median(pick(sb))} vs ${median(pick(off))} ms, ×${(median(pick(sb)) / median(pick(off))).toFixed(2)})`,
    );
  }
  console.log("targets: p50 ≤ 100 ms, p99 ≤ 300 ms; the sandbox adds ≤ 50 ms to the median");
  console.log(
    "\nGitHub's part: the time the GitHub stand-in spent answering requests the turn waited for before its spawn" +
      " (union of their time in flight; not the 👀 or the tracking comment), and the rest, which is Tether's",
  );
  for (const arm of arms) {
    console.log(arm.name);
    for (const kind of ["first", "follow"] as const) {
      const total = arm[kind];
      const gh = arm.github[kind];
      const own = total.map((t, i) => t - (gh[i] ?? 0));
      const s = (xs: number[]) => [...xs].sort((a, b) => a - b);
      console.log(
        `  ${(kind === "first" ? "first turn" : "follow-up").padEnd(12)} GitHub p50 ${percentile(s(gh), 50)} ms; Tether's own p50 ${percentile(s(own), 50)} ms, p99 ${percentile(s(own), 99)} ms (of p50 ${percentile(s(total), 50)} ms)`,
      );
    }
    const routes = [...arm.github.routes].map(
      ([name, ms]) =>
        `${name} ×${(ms.length / arm.follow.length).toFixed(1)} (p50 ${median(ms)} ms)`,
    );
    console.log(`  a follow-up waited for: ${routes.join("; ")}`);
  }
  console.log("\nwhat a person sees first (arrival at the GitHub stand-in), every turn");
  for (const arm of arms) {
    console.log(arm.name);
    show("comment → 👀", arm.eyes);
    show("comment → tracking comment", arm.tracking);
  }
  console.log("targets: 👀 p50 ≤ 300 ms, tracking comment p50 ≤ 1 s");
  console.log(
    "\nthe stand-in's own git: a bare `git fetch` with nothing new, no Tether, once a round",
  );
  for (const arm of arms) show(`${arm.name}'s stand-in`, arm.bareFetch);
  const [fsb, foff] = arms as [Arm, Arm];
  const standIn = median([...fsb.bareFetch, ...foff.bareFetch]);
  // A follow-up whose branches GitHub says did not move skips the fetch (--phases counts them):
  // then there is nothing of the stand-in's git to take off.
  const fetched = !phases || arms.every((a) => a.gitMs.skipped === 0);
  console.log(
    fetched
      ? `follow-up p50 less the stand-in's fetch: sandboxed ${median(fsb.follow) - standIn} ms, unsandboxed ${median(foff.follow) - standIn} ms ` +
          `(bare fetch p50 ${standIn} ms; load average ${os.loadavg()[0]!.toFixed(2)})`
      : `bare fetch p50 ${standIn} ms; follow-ups that skipped the mirror's fetch run none of it (load average ${os.loadavg()[0]!.toFixed(2)})`,
  );
  console.log(
    `\nthe machine's yardsticks, no Tether (once a round): a spawn of /bin/true from Node.js p50 ${median(yardsticks.spawn)} ms;` +
      ` bubblewrap starting /bin/true in a bare sandbox p50 ${median(yardsticks.bwrap)} ms; the bare fetch above p50 ${standIn} ms`,
  );
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
      const g = arm.gitMs;
      const look = g.sandboxLook.length ? `${median(g.sandboxLook)} ms` : "-";
      console.log(
        `follow-up git, as logged: the mirror's fetch skipped in ${g.skipped} of ${g.turns} (GitHub's branches as the mirror had them)` +
          (g.mirrorFetch.length ? `; where it ran, ${median(g.mirrorFetch)} ms` : "") +
          `; the checkout's look (sandboxed, alongside) ${look}` +
          `; the look taken after the last turn used in ${g.reused} of ${g.turns}`,
      );
    }
  }
} finally {
  for (const arm of arms) await arm.close();
}
