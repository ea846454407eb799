import { describe, expect, it } from "vitest";
import { claimTasks } from "../../src/sql/tasks/claim.js";
import { finishTask } from "../../src/sql/tasks/finish.js";
import { adoptOrphans, heartbeatTasks } from "../../src/sql/tasks/lease.js";
import { pinSession, recordDecision } from "../../src/sql/tasks/record.js";
import { sweepExpired } from "../../src/sql/tasks/sweep.js";
import { canReadTranscript } from "../../src/core/resume-decision.js";
import { markSession, priorSession, sessionById, upsertSession } from "../../src/sql/sessions.js";
import { registerRuntime } from "../../src/sql/runtimes.js";
import { createTestDatabase } from "../helpers/db.js";
import { readTask, seedTask } from "../helpers/seed.js";
import { repoIdOf } from "../helpers/seed.js";

const db = await createTestDatabase();
const pool = db.pool;
await registerRuntime(pool, {
  id: "rt",
  hostname: "h",
  homeDir: "/h",
  cliPath: "/c",
  cliVersion: "2.1.197",
  canResume: true,
  concurrency: 4,
});
await registerRuntime(pool, {
  id: "rt2",
  hostname: "h2",
  homeDir: "/h",
  cliPath: "/c",
  cliVersion: "2.1.197",
  canResume: true,
  concurrency: 4,
});

let n = 0;
const key = () => ({ repo: `octo/r${++n}`, issue_number: 1, agent: "tether" });

describe("claimTasks", () => {
  it("claims the oldest queued task first and marks it running for the runner", async () => {
    await pool.query("DELETE FROM tasks");
    const a = await seedTask(pool, { ...key(), created_at: new Date(Date.now() - 2000) });
    const b = await seedTask(pool, { ...key(), created_at: new Date(Date.now() - 1000) });
    const [first] = await claimTasks(pool, "runner-1", "rt", 1);
    expect(first?.id).toBe(a.id);
    const row = await readTask(pool, a.id);
    expect(row).toMatchObject({
      status: "running",
      locked_by: "runner-1",
      runtime_id: "rt",
      attempts: 1,
    });
    const [second] = await claimTasks(pool, "runner-2", "rt", 5);
    expect(second?.id).toBe(b.id);
    expect(await claimTasks(pool, "runner-3", "rt", 5)).toEqual([]);
  });

  it("never claims a task whose key already has a running task", async () => {
    await pool.query("DELETE FROM tasks");
    const k = key();
    await seedTask(pool, { ...k, status: "running", locked_by: "someone" });
    await seedTask(pool, { ...k, status: "queued" });
    expect(await claimTasks(pool, "runner-1", "rt", 10)).toEqual([]);
  });

  it("hands each task to exactly one of many concurrent claimers", async () => {
    await pool.query("DELETE FROM tasks");
    for (let i = 0; i < 60; i++) await seedTask(pool, key());
    const claims = await Promise.all(
      Array.from({ length: 6 }, (_, i) => claimTasks(pool, `runner-${i}`, "rt", 15)),
    );
    const ids = claims.flat().map((t) => t.id);
    expect(ids.length).toBe(60);
    expect(new Set(ids).size).toBe(60);
  });
});

describe("runtime affinity", () => {
  it("leaves a key whose session lives on another live runtime to that runtime, until the wait runs out", async () => {
    await pool.query("DELETE FROM tasks");
    await pool.query("UPDATE runtimes SET heartbeat_at = now()");
    const k = key();
    await upsertSession(pool, {
      repoId: repoIdOf(k.repo),
      cli: "claude",
      repo: k.repo,
      issueNumber: 1,
      agent: "tether",
      sessionId: `aff-${n}`,
      runtimeId: "rt2",
      workDir: "/w",
      model: null,
      historyEpoch: 0,
    });
    const t = await seedTask(pool, k);
    expect(await claimTasks(pool, "r-on-rt", "rt", 5)).toEqual([]);
    const [mine] = await claimTasks(pool, "r-on-rt2", "rt2", 5);
    expect(mine?.id).toBe(t.id);
  });

  it("claims at once a key whose session is in the shared store and readable by its CLI; waits when the CLI is older than the writer", async () => {
    await pool.query("DELETE FROM tasks");
    await pool.query("UPDATE runtimes SET heartbeat_at = now()");
    const stored = async (cliVersion: string | null, overBound = false) => {
      const k = key();
      const sessionId = `port-${n}`;
      await upsertSession(pool, {
        repoId: repoIdOf(k.repo),
        cli: "claude",
        repo: k.repo,
        issueNumber: 1,
        agent: "tether",
        sessionId,
        runtimeId: "rt2",
        workDir: "/w",
        model: null,
        historyEpoch: 0,
      });
      await pool.query(
        `INSERT INTO session_transcripts (repo_id, issue_number, agent, session_id, sha256, cli_version, over_bound)
         VALUES ($4, 1, 'tether', $1, '\\x00', $2, $3)`,
        [sessionId, cliVersion, overBound, repoIdOf(k.repo)],
      );
      return seedTask(pool, k);
    };
    const readable = await stored("2.1.100 (Claude Code)");
    expect(
      (await claimTasks(pool, "r-on-rt", "rt", 5, { claude: "2.1.197 (Claude Code)" })).map(
        (t) => t.id,
      ),
    ).toEqual([readable.id]);
    const newer = await stored("2.2.0 (Claude Code)");
    expect(await claimTasks(pool, "r-on-rt", "rt", 5, { claude: "2.1.197 (Claude Code)" })).toEqual(
      [],
    );
    expect(
      (await claimTasks(pool, "r-on-rt", "rt", 5, { claude: "2.2.1 (Claude Code)" })).map(
        (t) => t.id,
      ),
    ).toEqual([newer.id]);
    // Over the bound it starts fresh wherever it runs: no reason to wait for the holder.
    const big = await stored("2.1.100 (Claude Code)", true);
    expect((await claimTasks(pool, "r-on-rt", "rt", 5, {})).map((t) => t.id)).toEqual([big.id]);
  });

  it("a Codex session in the shared store is compared with this runner's Codex version, not Claude's", async () => {
    await pool.query("DELETE FROM tasks");
    await pool.query("UPDATE runtimes SET heartbeat_at = now(), stopped_at = NULL");
    const k = key();
    const sessionId = `codex-port-${n}`;
    await upsertSession(pool, {
      repoId: repoIdOf(k.repo),
      repo: k.repo,
      issueNumber: 1,
      agent: "tether",
      sessionId,
      runtimeId: "rt2",
      workDir: "/w",
      model: null,
      historyEpoch: 0,
      cli: "codex",
    });
    await pool.query(
      `INSERT INTO session_transcripts (repo_id, issue_number, agent, session_id, sha256, cli_version)
       VALUES ($2, 1, 'tether', $1, '\\x00', '0.169.0')`,
      [sessionId, repoIdOf(k.repo)],
    );
    const t = await seedTask(pool, k);
    // Claude's version says nothing about a rollout; no Codex version known yet: it waits for rt2.
    expect(await claimTasks(pool, "r-on-rt", "rt", 5, { claude: "2.1.197 (Claude Code)" })).toEqual(
      [],
    );
    expect(
      await claimTasks(pool, "r-on-rt", "rt", 5, { claude: "0.169.0", codex: "0.168.0" }),
    ).toEqual([]);
    expect(
      (await claimTasks(pool, "r-on-rt", "rt", 5, { claude: "2.1.197", codex: "0.169.0" })).map(
        (x) => x.id,
      ),
    ).toEqual([t.id]);
  });

  it("a session of any CLI the registry may add is compared with that CLI's version, by name (#31)", async () => {
    await pool.query("DELETE FROM tasks");
    await pool.query("UPDATE runtimes SET heartbeat_at = now(), stopped_at = NULL");
    const k = key();
    const sessionId = `third-port-${n}`;
    // No CHECK names the CLIs any more (migration 1763800004200): the code validates them.
    await upsertSession(pool, {
      repoId: repoIdOf(k.repo),
      repo: k.repo,
      issueNumber: 1,
      agent: "tether",
      sessionId,
      runtimeId: "rt2",
      workDir: "/w",
      model: null,
      historyEpoch: 0,
      cli: "third",
    });
    await pool.query(
      `INSERT INTO session_transcripts (repo_id, issue_number, agent, session_id, sha256, cli_version)
       VALUES ($2, 1, 'tether', $1, '\\x00', '1.4.0')`,
      [sessionId, repoIdOf(k.repo)],
    );
    const t = await seedTask(pool, k);
    expect(await claimTasks(pool, "r-on-rt", "rt", 5, { claude: "1.4.0", codex: "1.4.0" })).toEqual(
      [],
    );
    expect(await claimTasks(pool, "r-on-rt", "rt", 5, { third: "1.3.0" })).toEqual([]);
    expect(
      (await claimTasks(pool, "r-on-rt", "rt", 5, { third: "1.4.2" })).map((x) => x.id),
    ).toEqual([t.id]);
    // Read back as itself, not relabelled as the default CLI.
    expect((await sessionById(pool, sessionId))?.cli).toBe("third");
  });

  it("tether_cli_reads (SQL) and canReadTranscript agree", async () => {
    const rows: Array<[string | null, string | null]> = [
      ["2.1.197 (Claude Code)", "2.1.197 (Claude Code)"],
      ["2.1.100", "2.1.197"],
      ["2.1.197", "2.1.100"],
      ["2.1.197", "2.2.0"],
      ["2.9.0", "2.10.0"],
      ["2.1.197", "3.0.0"],
      [null, "2.1.197"],
      ["2.1.197", null],
      ["garbage", "2.1.197"],
    ];
    for (const [w, r] of rows) {
      const { rows: out } = await pool.query("SELECT tether_cli_reads($1, $2) AS ok", [w, r]);
      expect([w, r, out[0].ok]).toEqual([w, r, canReadTranscript(w, r)]);
    }
  });

  it("takes the task anyway once it waited past the affinity window, or when the other runtime is dead", async () => {
    await pool.query("DELETE FROM tasks");
    const k1 = key();
    await upsertSession(pool, {
      repoId: repoIdOf(k1.repo),
      cli: "claude",
      repo: k1.repo,
      issueNumber: 1,
      agent: "tether",
      sessionId: `aff-${n}`,
      runtimeId: "rt2",
      workDir: "/w",
      model: null,
      historyEpoch: 0,
    });
    const old = await seedTask(pool, { ...k1, created_at: new Date(Date.now() - 60_000) });
    expect((await claimTasks(pool, "r-on-rt", "rt", 5, {}, 30_000)).map((t) => t.id)).toEqual([
      old.id,
    ]);

    const k2 = key();
    await upsertSession(pool, {
      repoId: repoIdOf(k2.repo),
      cli: "claude",
      repo: k2.repo,
      issueNumber: 1,
      agent: "tether",
      sessionId: `aff-${n}`,
      runtimeId: "rt2",
      workDir: "/w",
      model: null,
      historyEpoch: 0,
    });
    await pool.query(
      "UPDATE runtimes SET heartbeat_at = now() - interval '5 minutes' WHERE id = 'rt2'",
    );
    const t2 = await seedTask(pool, k2);
    expect((await claimTasks(pool, "r-on-rt", "rt", 5)).map((t) => t.id)).toEqual([t2.id]);
    await pool.query("UPDATE runtimes SET heartbeat_at = now()");
  });
});

describe("writes after the claim are scoped to the claiming runner", () => {
  it("pins the session mid-run, keeps it through finish, and refuses another runner's writes", async () => {
    await pool.query("DELETE FROM tasks");
    const t = await seedTask(pool, key());
    await claimTasks(pool, "r-a", "rt", 1);
    expect(
      await recordDecision(pool, t.id as number, "r-a", {
        cli: "claude",
        decision: "fresh",
        reason: "no_prior_session",
        resumeSessionId: null,
        isFollowUp: false,
        historyEpoch: 0,
        workDir: "/w",
      }),
    ).toBe(true);
    expect(await pinSession(pool, t.id as number, "r-a", "sess-1")).toBe(true);
    expect((await readTask(pool, t.id)).session_id).toBe("sess-1");
    expect(await pinSession(pool, t.id as number, "r-b", "sess-evil")).toBe(false);
    expect(
      await finishTask(pool, t.id as number, "r-b", {
        status: "failed",
        outcome: "failed",
        failureReason: "x",
        sessionId: null,
        usage: null,
        answer: { kind: "posted", commentId: 4 },
      }),
    ).toBe(false);
    expect(
      await finishTask(pool, t.id as number, "r-a", {
        status: "failed",
        outcome: "poisoned",
        failureReason: "too long",
        sessionId: null,
        usage: null,
        answer: { kind: "posted", commentId: 5 },
      }),
    ).toBe(true);
    const row = await readTask(pool, t.id);
    expect(row).toMatchObject({
      status: "failed",
      outcome: "poisoned",
      session_id: "sess-1",
      answer_comment_id: 5,
      locked_by: null,
    });
  });

  it("reports cancel requests on heartbeat", async () => {
    await pool.query("DELETE FROM tasks");
    const t = await seedTask(pool, key());
    await claimTasks(pool, "r-c", "rt", 1);
    await pool.query("UPDATE tasks SET cancel_requested = true WHERE id = $1", [t.id]);
    expect(await heartbeatTasks(pool, "r-c")).toEqual({ held: [t.id], cancel: [t.id] });
  });
});

describe("crash recovery", () => {
  it("adopts tasks a dead process of the same runtime left running, and no others", async () => {
    await pool.query("DELETE FROM tasks");
    const mine = await seedTask(pool, {
      ...key(),
      status: "running",
      locked_by: "dead-proc",
      runtime_id: "rt",
      attempts: 1,
    });
    await seedTask(pool, { ...key(), status: "running", locked_by: "live-proc", runtime_id: "rt" });
    await seedTask(pool, {
      ...key(),
      status: "running",
      locked_by: "dead-proc",
      runtime_id: "rt2",
    });
    const adopted = await adoptOrphans(pool, "me", "rt", (holder) => holder === "dead-proc");
    expect(adopted.map((t) => t.id)).toEqual([mine.id]);
    expect(await readTask(pool, mine.id)).toMatchObject({
      locked_by: "me",
      attempts: 2,
      status: "running",
    });
  });

  it("the sweeper requeues expired tasks, folds a newer queued task of the key into it, and fails tasks out of attempts", async () => {
    await pool.query("DELETE FROM tasks");
    const k = key();
    const old = new Date(Date.now() - 120_000);
    const stale = await seedTask(pool, {
      ...k,
      status: "running",
      locked_by: "gone",
      heartbeat_at: old,
      attempts: 1,
    });
    const newer = await seedTask(pool, { ...k, status: "queued", force_fresh: true });
    await pool.query(
      `INSERT INTO task_comments (source, agent, task_id, comment_id, author, url, body) VALUES ('comment:77', 'tether', $1, 77, 'bob', 'u', 'more')`,
      [newer.id],
    );
    const spent = await seedTask(pool, {
      ...key(),
      status: "running",
      locked_by: "gone",
      heartbeat_at: old,
      attempts: 3,
      max_attempts: 3,
    });
    const fresh = await seedTask(pool, {
      ...key(),
      status: "running",
      locked_by: "alive",
      heartbeat_at: new Date(),
    });

    const res = await sweepExpired(pool, 60_000);
    expect(res).toEqual({ requeued: [stale.id], failed: [spent.id] });
    expect(await readTask(pool, stale.id)).toMatchObject({
      status: "queued",
      locked_by: null,
      force_fresh: true,
    });
    await expect(readTask(pool, newer.id)).rejects.toThrow(/no task/);
    const moved = await pool.query("SELECT task_id FROM task_comments WHERE comment_id = 77");
    expect(moved.rows[0].task_id).toBe(stale.id);
    expect(await readTask(pool, spent.id)).toMatchObject({ status: "failed", outcome: "failed" });
    expect((await readTask(pool, fresh.id)).status).toBe("running");
  });
});

describe("priorSession", () => {
  it("is the session of the latest finished task, judged by its latest state", async () => {
    await pool.query("DELETE FROM tasks");
    const k = key();
    const tk = { repoId: repoIdOf(k.repo), repo: k.repo, issueNumber: 1, agent: "tether" };
    expect(await priorSession(pool, tk)).toBeNull();
    await upsertSession(pool, {
      cli: "claude",
      ...tk,
      sessionId: "s-old",
      runtimeId: "rt",
      workDir: "/w",
      model: "m",
      historyEpoch: 0,
    });
    await upsertSession(pool, {
      cli: "claude",
      ...tk,
      sessionId: "s-new",
      runtimeId: "rt",
      workDir: "/w",
      model: "m",
      historyEpoch: 0,
    });
    await seedTask(pool, {
      ...k,
      status: "succeeded",
      session_id: "s-old",
      finished_at: new Date(Date.now() - 5000),
    });
    await seedTask(pool, {
      ...k,
      status: "succeeded",
      session_id: "s-new",
      finished_at: new Date(Date.now() - 1000),
    });
    await seedTask(pool, { ...k, status: "queued" });
    expect(await priorSession(pool, tk)).toMatchObject({
      sessionId: "s-new",
      state: "active",
      runtimeId: "rt",
    });
    await markSession(pool, "s-new", "poisoned", "prompt too long");
    expect(await priorSession(pool, tk)).toMatchObject({ sessionId: "s-new", state: "poisoned" });
  });
});
