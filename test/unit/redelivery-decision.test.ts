import { describe, expect, it } from "vitest";
import {
  decideRedeliveries,
  isRetryableStatus,
  lookbackStart,
  LEAVE_REASONS,
  type DeliveryAttempt,
  type LookbackInput,
  type RedeliveryInput,
} from "../../src/core/redelivery-decision.js";

const NOW = new Date("2026-11-27T12:00:00Z");
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const POLICY = { settleMs: 2 * MIN, maxAttempts: 4 };

/** Attempt `id` of delivery "g", made `minutesAgo` before NOW, answered `status`. */
const attempt = (id: number, minutesAgo: number, status: number, guid = "g"): DeliveryAttempt => ({
  id,
  guid,
  deliveredAt: new Date(NOW.getTime() - minutesAgo * MIN),
  redelivery: id > 1,
  statusCode: status,
  event: "issue_comment",
  action: "created",
});

const input = (over: Partial<RedeliveryInput>): RedeliveryInput => ({
  attempts: [],
  inInbox: new Set(),
  now: NOW,
  policy: POLICY,
  ...over,
});

/** One delivery's fate: `redeliver <attempt id>` or the reason it is left. */
function fate(over: Partial<RedeliveryInput>): string {
  const plan = decideRedeliveries(input(over));
  const left = Object.entries(plan.left).filter(([, n]) => n > 0);
  expect(plan.redeliver.length + left.reduce((s, [, n]) => s + n, 0)).toBe(1);
  return plan.redeliver[0] ? `redeliver ${plan.redeliver[0].attemptId}` : left[0]![0];
}

describe("decideRedeliveries: one delivery", () => {
  const rows: Array<[string, Partial<RedeliveryInput>, string]> = [
    ["a 500 ten minutes ago", { attempts: [attempt(1, 10, 500)] }, "redeliver 1"],
    ["no answer at all (0)", { attempts: [attempt(1, 10, 0)] }, "redeliver 1"],
    ["408, the body too slow", { attempts: [attempt(1, 10, 408)] }, "redeliver 1"],
    ["429", { attempts: [attempt(1, 10, 429)] }, "redeliver 1"],
    ["502", { attempts: [attempt(1, 10, 502)] }, "redeliver 1"],
    ["503, too many bodies in flight", { attempts: [attempt(1, 10, 503)] }, "redeliver 1"],
    ["200", { attempts: [attempt(1, 10, 200)] }, "delivered"],
    ["202", { attempts: [attempt(1, 10, 202)] }, "delivered"],
    ["204", { attempts: [attempt(1, 10, 204)] }, "delivered"],
    [
      "a 500, then a redelivery answered 200",
      { attempts: [attempt(1, 30, 500), attempt(2, 10, 200)] },
      "delivered",
    ],
    [
      "a 200, then an operator's redelivery that got a 500",
      { attempts: [attempt(1, 30, 200), attempt(2, 10, 500)] },
      "delivered",
    ],
    ["400, a bad signature", { attempts: [attempt(1, 10, 400)] }, "permanent"],
    ["401", { attempts: [attempt(1, 10, 401)] }, "permanent"],
    ["404, a wrong webhook URL", { attempts: [attempt(1, 10, 404)] }, "permanent"],
    ["413, over TETHER_WEBHOOK_MAX_BYTES", { attempts: [attempt(1, 10, 413)] }, "permanent"],
    ["301, a redirect GitHub does not follow", { attempts: [attempt(1, 10, 301)] }, "permanent"],
    ["a 500 one minute ago: settling", { attempts: [attempt(1, 1, 500)] }, "settling"],
    ["a 500 just now: settling", { attempts: [attempt(1, 0, 500)] }, "settling"],
    ["a 500 exactly the settle delay ago", { attempts: [attempt(1, 2, 500)] }, "redeliver 1"],
    [
      "an old 500 with a young redelivery that failed too: settling",
      { attempts: [attempt(1, 30, 500), attempt(2, 1, 0)] },
      "settling",
    ],
    [
      "a 500 kept in the inbox: only the answer failed",
      { attempts: [attempt(1, 10, 500)], inInbox: new Set(["g"]) },
      "in_inbox",
    ],
    [
      "in the inbox and young: in_inbox",
      { attempts: [attempt(1, 1, 500)], inInbox: new Set(["g"]) },
      "in_inbox",
    ],
    [
      "a 200 in the inbox: delivered",
      { attempts: [attempt(1, 10, 200)], inInbox: new Set(["g"]) },
      "delivered",
    ],
    [
      "another delivery in the inbox does not count",
      { attempts: [attempt(1, 10, 500)], inInbox: new Set(["other"]) },
      "redeliver 1",
    ],
    [
      "two failed attempts: the newest is redelivered",
      { attempts: [attempt(1, 30, 500), attempt(2, 20, 503)] },
      "redeliver 2",
    ],
    [
      "listed newest first: still the newest",
      { attempts: [attempt(3, 10, 0), attempt(2, 20, 500), attempt(1, 30, 500)] },
      "redeliver 3",
    ],
    [
      "three failed attempts: one more",
      { attempts: [attempt(1, 30, 500), attempt(2, 20, 500), attempt(3, 10, 500)] },
      "redeliver 3",
    ],
    [
      "four failed attempts: given up",
      {
        attempts: [
          attempt(1, 40, 500),
          attempt(2, 30, 500),
          attempt(3, 20, 500),
          attempt(4, 10, 0),
        ],
      },
      "gave_up",
    ],
    [
      "five failed attempts (an operator pressed Redeliver too): given up",
      {
        attempts: [1, 2, 3, 4, 5].map((id) => attempt(id, 60 - id * 10, 500)),
      },
      "gave_up",
    ],
    [
      "maxAttempts 1: the original alone is all",
      { attempts: [attempt(1, 10, 500)], policy: { ...POLICY, maxAttempts: 1 } },
      "gave_up",
    ],
    [
      "the newest answer decides: a 500, then a 413",
      { attempts: [attempt(1, 30, 500), attempt(2, 10, 413)] },
      "permanent",
    ],
    [
      "the newest answer decides: a 413 (the cap since raised), then a 503",
      { attempts: [attempt(1, 30, 413), attempt(2, 10, 503)] },
      "redeliver 2",
    ],
    [
      "a permanent refusal is told as such, whatever the count",
      {
        attempts: [
          attempt(1, 40, 500),
          attempt(2, 30, 500),
          attempt(3, 20, 500),
          attempt(4, 10, 400),
        ],
      },
      "permanent",
    ],
    [
      "two attempts at the same second: the later id is the newer",
      { attempts: [attempt(7, 10, 500), attempt(8, 10, 0)] },
      "redeliver 8",
    ],
    [
      "settle delay 0: a failure a moment ago is redelivered",
      { attempts: [attempt(1, 0, 0)], policy: { ...POLICY, settleMs: 0 } },
      "redeliver 1",
    ],
  ];
  it.each(rows)("%s", (_name, over, expected) => {
    expect(fate(over)).toBe(expected);
  });
});

describe("decideRedeliveries: a listing", () => {
  it("groups attempts by delivery, counts the ones left by reason, redelivers oldest first", () => {
    const plan = decideRedeliveries(
      input({
        attempts: [
          attempt(20, 1, 500, "young"),
          attempt(19, 5, 0, "newer-failure"),
          attempt(18, 8, 200, "fine"),
          attempt(17, 9, 413, "too-large"),
          attempt(16, 10, 500, "kept"),
          attempt(15, 12, 502, "older-failure"),
          attempt(14, 15, 401, "bad-secret"),
          attempt(13, 20, 500, "older-failure"),
          ...[9, 10, 11, 12].map((id) => attempt(id, 60 - id, 503, "hopeless")),
        ],
        inInbox: new Set(["kept", "not-listed"]),
      }),
    );
    expect(plan.redeliver).toEqual([
      {
        attemptId: 15,
        guid: "older-failure",
        event: "issue_comment",
        action: "created",
        statusCode: 502,
        attempts: 2,
      },
      {
        attemptId: 19,
        guid: "newer-failure",
        event: "issue_comment",
        action: "created",
        statusCode: 0,
        attempts: 1,
      },
    ]);
    expect(plan.left).toEqual({
      delivered: 1,
      in_inbox: 1,
      settling: 1,
      permanent: 2,
      gave_up: 1,
    });
  });

  it("an empty listing: nothing to do, every reason counted 0", () => {
    const plan = decideRedeliveries(input({}));
    expect(plan.redeliver).toEqual([]);
    expect(Object.keys(plan.left)).toEqual([...LEAVE_REASONS]);
    expect(Object.values(plan.left).every((n) => n === 0)).toBe(true);
  });
});

describe("isRetryableStatus", () => {
  const rows: Array<[number, boolean]> = [
    [0, true],
    [408, true],
    [429, true],
    [500, true],
    [502, true],
    [503, true],
    [504, true],
    [599, true],
    [400, false],
    [401, false],
    [403, false],
    [404, false],
    [405, false],
    [413, false],
    [422, false],
    [301, false],
  ];
  it.each(rows)("%i → %s", (status, retryable) => {
    expect(isRetryableStatus(status)).toBe(retryable);
  });
});

describe("lookbackStart", () => {
  const base: LookbackInput = {
    now: NOW,
    mark: undefined,
    policy: POLICY,
    intervalMs: 5 * MIN,
    firstLookbackMs: DAY,
    horizonMs: 3 * DAY,
    clockMarginMs: 5 * MIN,
  };
  const ago = (ms: number) => new Date(NOW.getTime() - ms);
  // The shortest window: settle 2 + 4 attempts × 5 min + margin 5 = 27 minutes.
  const rows: Array<[string, Partial<LookbackInput>, Date]> = [
    ["the first sweep: the first lookback", {}, ago(DAY)],
    [
      "the first sweep never looks past GitHub's horizon",
      { firstLookbackMs: 5 * DAY },
      ago(3 * DAY),
    ],
    [
      "after a sweep 5 minutes ago: the shortest window, which spans a delivery's redeliveries",
      { mark: ago(5 * MIN) },
      ago(27 * MIN),
    ],
    [
      "after two hours down: back to the last sweep, less the settle delay and the margin",
      { mark: ago(2 * HOUR) },
      ago(2 * HOUR + 7 * MIN),
    ],
    ["after five days down: GitHub's horizon", { mark: ago(5 * DAY) }, ago(3 * DAY)],
    [
      "a mark in the future (clocks apart): the shortest window",
      { mark: ago(-HOUR) },
      ago(27 * MIN),
    ],
    [
      "a longer interval widens the shortest window",
      { mark: ago(5 * MIN), intervalMs: 60 * MIN },
      ago(2 * MIN + 4 * HOUR + 5 * MIN),
    ],
  ];
  it.each(rows)("%s", (_name, over, expected) => {
    expect(lookbackStart({ ...base, ...over }).toISOString()).toBe(expected.toISOString());
  });
});
