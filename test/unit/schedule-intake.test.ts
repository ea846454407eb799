import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadEnv } from "../../src/env.js";
import { installedRepos } from "../../src/intake/installation-schedules.js";
import { fileClock, scheduleRequest, SCHEDULE_AUTHOR } from "../../src/intake/scheduler.js";
import { renderFooter } from "../../src/runner/render/thread-comments.js";

const repo = (id: number, full_name: string) => ({ id, full_name });

describe("installedRepos", () => {
  it.each([
    {
      name: "installation.created",
      event: "installation",
      payload: { action: "created", installation: { id: 5 }, repositories: [repo(1, "O/A")] },
      want: { installationId: 5, repos: [{ id: 1, fullName: "o/a" }] },
    },
    {
      name: "installation_repositories.added",
      event: "installation_repositories",
      payload: { action: "added", installation: { id: 5 }, repositories_added: [repo(2, "o/b")] },
      want: { installationId: 5, repos: [{ id: 2, fullName: "o/b" }] },
    },
    {
      name: "installation.deleted",
      event: "installation",
      payload: { action: "deleted", installation: { id: 5 }, repositories: [repo(1, "o/a")] },
      want: { ignore: "installation.deleted adds no repository" },
    },
    {
      name: "a payload without an installation",
      event: "installation",
      payload: { action: "created" },
      want: { ignore: "unexpected installation payload" },
    },
  ])("$name", ({ event, payload, want }) => {
    expect(installedRepos(event, payload)).toEqual(want);
  });
});

describe("scheduleRequest", () => {
  const s = { id: 3, cron: "0 9 * * 1", timezone: "UTC", request: "Triage.", lastRunAt: null };
  const o = {
    tick: new Date("2026-12-07T09:00:00Z"),
    url: "https://github.com/o/a/issues/42",
    now: new Date("2026-12-07T09:00:05Z"),
  };
  it("says it is the first turn, keyed by schedule and tick, trigger schedule", () => {
    expect(scheduleRequest(s, o)).toMatchObject({
      source: "schedule:3:2026-12-07T09:00:00.000Z",
      author: SCHEDULE_AUTHOR,
      trigger: "schedule",
      body: "[A scheduled turn (`0 9 * * 1`, UTC, from .github/tether.yml), due at 2026-12-07T09:00:00.000Z. This is the schedule's first turn.]\n\nTriage.",
    });
  });
  it("says when the last scheduled turn ran", () => {
    const r = scheduleRequest({ ...s, lastRunAt: new Date("2026-11-30T09:00:02Z") }, o);
    expect(r.body).toContain(
      "Your last scheduled turn in this conversation ran at 2026-11-30T09:00:02.000Z.",
    );
  });
});

describe("the footer of a scheduled turn", () => {
  it("names the trigger", () => {
    const f = { resumed: true, reason: "resumed" as const, sessionId: null, usage: null };
    expect(renderFooter({ ...f, scheduled: true })).toContain("⏰ schedule");
    expect(renderFooter(f)).not.toContain("schedule");
  });
});

describe("TETHER_SCHEDULE_CLOCK_FILE (for tests)", () => {
  it("is unset by default; the clock it names reads the file's time at each call and refuses anything else", () => {
    expect(loadEnv({}).TETHER_SCHEDULE_CLOCK_FILE).toBeUndefined();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tether-clock-"));
    try {
      const file = path.join(dir, "now");
      expect(loadEnv({ TETHER_SCHEDULE_CLOCK_FILE: file }).TETHER_SCHEDULE_CLOCK_FILE).toBe(file);
      const now = fileClock(file);
      expect(() => now()).toThrow(/ENOENT/);
      fs.writeFileSync(file, "2026-12-01T09:00:05.000Z\n");
      expect(now().toISOString()).toBe("2026-12-01T09:00:05.000Z");
      fs.writeFileSync(file, "2026-12-01T09:01:05Z");
      expect(now().toISOString()).toBe("2026-12-01T09:01:05.000Z");
      fs.writeFileSync(file, "soon");
      expect(() => now()).toThrow(/TETHER_SCHEDULE_CLOCK_FILE .* holds no ISO 8601 time: "soon"/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
