/**
 * Tether's GitHub request policy: when a failed request is retried and after how long (a table),
 * how writes are spaced, and that a request with nothing to wait for sets no timer at all (what
 * the throttling and retry plugins it replaces cost: about 15 ms per request in timer hops).
 */
import { ProbotOctokit } from "probot";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  requestPolicy,
  retryVerdict,
  type RequestPolicyOptions,
  type RetryKind,
} from "../../src/github/request-policy.js";

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const none: Record<RetryKind, number> = {
  "primary-rate-limit": 0,
  "secondary-rate-limit": 0,
  transient: 0,
};
const opts = {
  retries: 3,
  backoffMs: 1000,
  secondaryFallbackMs: 60_000,
  maxWaitMs: 10 * 60_000,
  now: NOW,
};

function failure(status: number, message = "failed", headers: Record<string, string> = {}) {
  return Object.assign(new Error(message), { status, response: { headers } });
}

describe("retryVerdict", () => {
  const resetIn = (s: number) => String(Math.floor(NOW / 1000) + s);
  it.each([
    ["a 502", failure(502), none, { retry: true, kind: "transient", waitMs: 1000 }],
    [
      "a 503 on its third retry",
      failure(503),
      { ...none, transient: 2 },
      { retry: true, kind: "transient", waitMs: 9000 },
    ],
    ["a 500 after three retries", failure(500), { ...none, transient: 3 }, { retry: false }],
    [
      "a network failure (Octokit's 500)",
      failure(500, "fetch failed"),
      none,
      { retry: true, kind: "transient", waitMs: 1000 },
    ],
    [
      "a 503 with retry-after",
      failure(503, "down", { "retry-after": "7" }),
      none,
      { retry: true, kind: "transient", waitMs: 7000 },
    ],
    [
      // GitHub: with neither retry-after nor x-ratelimit-remaining 0, wait at least a minute.
      "a 429 without retry-after or rate-limit headers",
      failure(429, "too many"),
      none,
      { retry: true, kind: "secondary-rate-limit", waitMs: 60_000 },
    ],
    [
      "a 429 without headers, on its third retry (a minute again, not 9 s)",
      failure(429, "too many"),
      { ...none, "secondary-rate-limit": 2 },
      { retry: true, kind: "secondary-rate-limit", waitMs: 60_000 },
    ],
    [
      "a 429 with quota left but no retry-after",
      failure(429, "too many", { "x-ratelimit-remaining": "4000" }),
      none,
      { retry: true, kind: "secondary-rate-limit", waitMs: 60_000 },
    ],
    [
      "a 429 with retry-after",
      failure(429, "too many", { "retry-after": "5" }),
      none,
      { retry: true, kind: "secondary-rate-limit", waitMs: 5000 },
    ],
    [
      "a primary rate limit (429) with the quota used up: until x-ratelimit-reset",
      failure(429, "API rate limit exceeded", {
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": resetIn(120),
      }),
      none,
      { retry: true, kind: "primary-rate-limit", waitMs: 121_000 },
    ],
    [
      "a rate limit that resets later than the longest wait: not retried, and says so",
      failure(403, "API rate limit exceeded", {
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": resetIn(40 * 60),
      }),
      none,
      { retry: false, tooLong: { kind: "primary-rate-limit", waitMs: 2_401_000 } },
    ],
    [
      "a 503 whose retry-after is longer than the longest wait",
      failure(503, "down", { "retry-after": "1200" }),
      none,
      { retry: false, tooLong: { kind: "transient", waitMs: 1_200_000 } },
    ],
    [
      "a retry-after longer than the longest wait",
      failure(429, "too many", { "retry-after": "3600" }),
      none,
      { retry: false, tooLong: { kind: "secondary-rate-limit", waitMs: 3_600_000 } },
    ],
    [
      "a primary rate limit (403)",
      failure(403, "API rate limit exceeded", {
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": resetIn(30),
      }),
      none,
      { retry: true, kind: "primary-rate-limit", waitMs: 31_000 },
    ],
    [
      "a primary rate limit (429) already reset",
      failure(429, "API rate limit exceeded", {
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": resetIn(-5),
      }),
      none,
      { retry: true, kind: "primary-rate-limit", waitMs: 0 },
    ],
    [
      "a primary rate limit after three waits",
      failure(403, "API rate limit exceeded", {
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": resetIn(1),
      }),
      { ...none, "primary-rate-limit": 3 },
      { retry: false },
    ],
    [
      "a secondary rate limit with retry-after",
      failure(403, "You have exceeded a secondary rate limit", { "retry-after": "2" }),
      none,
      { retry: true, kind: "secondary-rate-limit", waitMs: 2000 },
    ],
    [
      "a secondary rate limit without retry-after",
      failure(403, "You have exceeded a secondary rate limit"),
      none,
      { retry: true, kind: "secondary-rate-limit", waitMs: 60_000 },
    ],
    [
      "a 403 with retry-after and quota left",
      failure(403, "slow down", { "retry-after": "3", "x-ratelimit-remaining": "12" }),
      none,
      { retry: true, kind: "secondary-rate-limit", waitMs: 3000 },
    ],
    [
      "a secondary limit after three waits, with transient retries left",
      failure(403, "secondary rate limit", { "retry-after": "1" }),
      { ...none, "secondary-rate-limit": 3 },
      { retry: false },
    ],
    ["a 403 that is a refusal", failure(403, "Resource not accessible"), none, { retry: false }],
    ["a 404", failure(404, "Not Found"), none, { retry: false }],
    ["a 401", failure(401, "Bad credentials"), none, { retry: false }],
    ["a 422", failure(422, "Validation Failed"), none, { retry: false }],
    [
      "a 409 (worth another try)",
      failure(409),
      none,
      { retry: true, kind: "transient", waitMs: 1000 },
    ],
    ["an error with no status", new Error("boom"), none, { retry: false }],
    ["not an error at all", "nope", none, { retry: false }],
  ])("%s", (_name, err, tried, expected) => {
    expect(retryVerdict(err, tried, opts)).toEqual(expected);
  });
});

// ---------------------------------------------------------------------------------------------
// The plugin, on an Octokit whose fetch is a function here (no network, no timers of its own).

interface Call {
  method: string;
  url: string;
}

function fakeOctokit(
  policy: RequestPolicyOptions,
  answer: (call: Call, n: number) => Response | Promise<Response> = () => json(200, {}),
  auth: Record<string, unknown> = {},
) {
  const calls: Call[] = [];
  const warnings: string[] = [];
  const fetch = async (url: string, init: { method: string }) => {
    const call = { method: init.method, url: String(url) };
    calls.push(call);
    return answer(call, calls.length);
  };
  const Octokit = ProbotOctokit.plugin(
    requestPolicy as unknown as Parameters<typeof ProbotOctokit.plugin>[0],
  );
  const octokit = new Octokit({
    throttle: { enabled: false },
    retry: { enabled: false },
    requestPolicy: policy,
    request: { fetch },
    auth,
    log: {
      debug: () => {},
      info: () => {},
      warn: (m: string) => warnings.push(m),
      error: () => {},
    },
  } as Record<string, unknown>);
  return { octokit, calls, warnings };
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

const where = { owner: "octo", repo: "widgets", issue_number: 1 };

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the request policy plugin", () => {
  it("lets a request with nothing to wait for through without a timer", async () => {
    // The plugins this replaces set several timers per request (Bottleneck), ~15 ms in all.
    const { octokit, calls } = fakeOctokit({ spacing: true }, undefined, { installationId: 76 });
    const timers = vi.spyOn(globalThis, "setTimeout");
    await octokit.rest.issues.get(where);
    await octokit.rest.issues.createComment({ ...where, body: "the first write goes at once" });
    await octokit.rest.issues.get(where);
    expect(calls.map((c) => c.method)).toEqual(["GET", "POST", "GET"]);
    expect(timers).not.toHaveBeenCalled();
  });

  it("spaces writes a second apart and notifying writes three seconds apart", async () => {
    let clock = 1_000_000;
    const waits: number[] = [];
    const starts: number[] = [];
    const { octokit } = fakeOctokit(
      {
        spacing: true,
        now: () => clock,
        sleep: async (ms) => {
          waits.push(ms);
          clock += ms;
        },
      },
      () => {
        starts.push(clock);
        return json(201, {});
      },
      { installationId: 77 },
    );
    await octokit.rest.reactions.createForIssueComment({
      ...where,
      comment_id: 5,
      content: "eyes",
    });
    await octokit.rest.issues.createComment({ ...where, body: "one" });
    await octokit.rest.issues.createComment({ ...where, body: "two" });
    await octokit.rest.issues.get(where); // a read is never spaced
    expect(starts.map((t) => t - 1_000_000)).toEqual([0, 1000, 4000, 4000]);
    expect(waits).toEqual([1000, 3000]); // the third: 1 s for the write lane and the rest for notify
  });

  it("lines up writes that arrive together", async () => {
    const waits: number[] = [];
    const { octokit, calls } = fakeOctokit(
      { spacing: true, now: () => 5_000_000, sleep: async (ms) => void waits.push(ms) },
      undefined,
      { installationId: 78 },
    );
    await Promise.all(
      [1, 2, 3].map((id) =>
        octokit.rest.issues.updateComment({ ...where, comment_id: id, body: "x" }),
      ),
    );
    expect(calls).toHaveLength(3);
    expect(waits.sort((x, y) => x - y)).toEqual([1000, 2000]); // the first went at once
  });

  it("does not space anything with spacing off", async () => {
    const waits: number[] = [];
    const { octokit, calls } = fakeOctokit({
      spacing: false,
      sleep: async (ms) => void waits.push(ms),
    });
    for (let i = 0; i < 3; i++) await octokit.rest.issues.createComment({ ...where, body: `${i}` });
    expect(calls).toHaveLength(3);
    expect(waits).toEqual([]);
  });

  it("retries a 502 after the backoff, and says so in the log", async () => {
    const waits: number[] = [];
    const { octokit, calls, warnings } = fakeOctokit(
      { spacing: false, sleep: async (ms) => void waits.push(ms) },
      (_c, n) => (n <= 2 ? json(502, { message: "bad gateway" }) : json(200, { number: 1 })),
    );
    const { data } = await octokit.rest.issues.get(where);
    expect(data).toEqual({ number: 1 });
    expect(calls).toHaveLength(3);
    expect(waits).toEqual([1000, 4000]);
    expect(warnings[0]).toMatch(/GitHub error 502 on GET .*issues.*retry 1 of 3 in 1 s/);
  });

  it("gives up after three retries with GitHub's own error", async () => {
    const { octokit, calls } = fakeOctokit({ spacing: false, sleep: async () => {} }, () =>
      json(503, { message: "unavailable" }),
    );
    await expect(octokit.rest.issues.get(where)).rejects.toMatchObject({ status: 503 });
    expect(calls).toHaveLength(4);
  });

  it("never retries a 404", async () => {
    const { octokit, calls } = fakeOctokit({ spacing: false, sleep: async () => {} }, () =>
      json(404, { message: "Not Found" }),
    );
    await expect(octokit.rest.issues.get(where)).rejects.toMatchObject({ status: 404 });
    expect(calls).toHaveLength(1);
  });

  it("waits a minute after a 429 that says nothing of when, then posts once (fake clock)", async () => {
    let clock = 2_000_000;
    const waits: number[] = [];
    const starts: number[] = [];
    const { octokit, calls, warnings } = fakeOctokit(
      {
        spacing: false,
        now: () => clock,
        sleep: async (ms) => {
          waits.push(ms);
          clock += ms;
        },
      },
      (_c, n) => {
        starts.push(clock);
        return n === 1 ? json(429, { message: "Too Many Requests" }) : json(201, { id: 3 });
      },
    );
    const { data } = await octokit.rest.issues.createComment({ ...where, body: "x" });
    expect(data).toEqual({ id: 3 });
    expect(calls).toHaveLength(2);
    expect(waits).toEqual([60_000]);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(60_000);
    expect(warnings[0]).toMatch(/secondary rate limit \(429\).*retry 1 of 3 in 60 s/);
  });

  it("fails at once, saying why, when GitHub asks for a longer wait than the longest it takes", async () => {
    const waits: number[] = [];
    const { octokit, calls } = fakeOctokit(
      { spacing: false, now: () => NOW, sleep: async (ms) => void waits.push(ms) },
      () =>
        json(
          403,
          { message: "API rate limit exceeded for installation." },
          {
            "x-ratelimit-remaining": "0",
            "x-ratelimit-reset": String(Math.floor(NOW / 1000) + 45 * 60),
          },
        ),
    );
    const err = await octokit.rest.issues.get(where).catch((e: unknown) => e);
    expect(calls).toHaveLength(1);
    expect(waits).toEqual([]);
    // Still GitHub's status and headers, so the answer outbox and intake retry it later.
    expect(err).toMatchObject({
      status: 403,
      response: { headers: expect.objectContaining({ "x-ratelimit-remaining": "0" }) },
    });
    expect((err as Error).message).toMatch(
      /GitHub's rate limit \(403\) on GET .*issues\/\{issue_number\} asks to wait 45 min, longer than the 10 min Tether waits/,
    );
  });

  it("waits out a secondary rate limit on a comment, then posts it once", async () => {
    const waits: number[] = [];
    const { octokit, calls } = fakeOctokit(
      { spacing: false, sleep: async (ms) => void waits.push(ms) },
      (_c, n) =>
        n === 1
          ? json(
              403,
              { message: "You have exceeded a secondary rate limit." },
              { "retry-after": "4" },
            )
          : json(201, { id: 9 }),
    );
    const { data } = await octokit.rest.issues.createComment({ ...where, body: "x" });
    expect(data).toEqual({ id: 9 });
    expect(calls).toHaveLength(2);
    expect(waits).toEqual([4000]);
  });
});
