/**
 * The one reading of a webhook event (src/intake/events.ts), over every example GitHub publishes
 * (@octokit/webhooks-examples): the webhook's screening and the processor, which reads the
 * trimmed copy the inbox kept, see the same trigger under the same keys; the keys are the ones
 * the inbox has always stored (a redelivery must still find its twin); anything else, however
 * malformed, is refused with a reason, never a throw.
 */
import { createRequire } from "node:module";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { INTAKE_EVENTS, readDelivery, readEvent, type EventRead } from "../../src/intake/events.js";
import { screenDelivery } from "../../src/intake/webhook.js";

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const require = createRequire(import.meta.url);
const definitions = require("@octokit/webhooks-examples") as Array<{
  name: string;
  examples: Json[];
}>;

const HANDLED: ReadonlySet<string> = new Set(INTAKE_EVENTS);

/** Every example, as a GitHub App receives it (with its installation), and a few variants. */
function cases(): Array<{ title: string; name: string; payload: Json }> {
  const out: Array<{ title: string; name: string; payload: Json }> = [];
  for (const def of definitions)
    def.examples.forEach((example, i) => {
      const title = `${def.name}.${String(example.action ?? "-")} #${i}`;
      const payload = structuredClone(example);
      payload.installation ??= { id: 7, node_id: "x" };
      out.push({ title, name: def.name, payload });
      // A text that mentions someone, so the screening takes it in.
      for (const k of ["comment", "review", "issue"])
        if (
          payload[k] &&
          typeof payload[k] === "object" &&
          HANDLED.has(kindOf(def.name, payload))
        ) {
          const mentioned = structuredClone(payload);
          mentioned[k].body = `@tether have a look\n\n${String(mentioned[k].body ?? "")}`;
          // An edit of the body, not only of the title.
          if (payload.action === "edited") mentioned.changes = { body: { from: "earlier words" } };
          out.push({ title: `${title} mentioning @tether`, name: def.name, payload: mentioned });
        }
      // A run on a conversation's branch, for its pull request in this repository (not a
      // fork's: issue 38), so the screening takes it in.
      const own = (p: Json) => {
        const id = p.repository?.id as number;
        const repo = { id, url: "https://api.github.com/repositories/1", name: "r" };
        const pr = {
          url: "u",
          id: 1,
          number: 7,
          head: { ref: "tether/7-tether", sha: "0".repeat(40), repo },
          base: { ref: "main", sha: "0".repeat(40), repo },
        };
        return [pr];
      };
      if (["check_suite", "workflow_run"].includes(def.name)) {
        const ours = structuredClone(payload);
        ours[def.name].head_branch = "tether/7-tether";
        ours[def.name].pull_requests = own(ours);
        if (def.name === "workflow_run") ours.workflow_run.head_repository = ours.repository;
        out.push({ title: `${title} on a conversation's branch`, name: def.name, payload: ours });
      }
      if (def.name === "check_run" && payload.check_run?.check_suite) {
        const ours = structuredClone(payload);
        ours.check_run.check_suite.head_branch = "tether/7-tether";
        ours.check_run.pull_requests = own(ours);
        out.push({ title: `${title} on a conversation's branch`, name: def.name, payload: ours });
      }
    });
  return out;
}

function kindOf(name: string, payload: unknown): string {
  return `${name}.${String((payload as Json | null)?.action)}`;
}

/** What jsonb gives back: the inbox stores the payload as JSON. */
const viaJson = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** The processor's reading of what the webhook put in the inbox. */
function processorReads(name: string, screenedPayload: object): EventRead {
  return readDelivery({ event: name, payload: viaJson(screenedPayload) });
}

/** The keys the inbox stored before events.ts, computed here from GitHub's fields. */
function expectedKey(name: string, p: Json): string | undefined {
  const digest = /[0-9a-f]{12}/.source;
  switch (kindOf(name, p)) {
    case "issue_comment.created":
      return `comment:${p.comment.id}:created`;
    case "issue_comment.deleted":
      return `comment:${p.comment.id}:deleted`;
    case "issue_comment.edited":
      return `comment:${p.comment.id}:edited:${p.comment.updated_at}:${digest}`;
    case "pull_request_review_comment.created":
      return `review_comment:${p.comment.id}:created`;
    case "pull_request_review_comment.deleted":
      return `review_comment:${p.comment.id}:deleted`;
    case "pull_request_review_comment.edited":
      return `review_comment:${p.comment.id}:edited:${p.comment.updated_at}:${digest}`;
    case "pull_request_review.submitted":
      return `review:${p.review.id}:submitted`;
    case "issues.opened":
      return `issue:${p.issue.id}:opened`;
    case "issues.edited":
      return `issue:${p.issue.id}:edited:${p.issue.updated_at}:${digest}`;
    case "issues.labeled":
      return `issue:${p.issue.id}:labeled:${p.label.name.toLowerCase()}:${p.issue.updated_at}`;
    case "issues.assigned":
      return `issue:${p.issue.id}:assigned:${p.assignee.login.toLowerCase()}:${p.issue.updated_at}`;
    case "pull_request.labeled":
      return `pull:${p.pull_request.id}:labeled:${p.label.name.toLowerCase()}:${p.pull_request.updated_at}`;
    case "pull_request.assigned":
      return `pull:${p.pull_request.id}:assigned:${p.assignee.login.toLowerCase()}:${p.pull_request.updated_at}`;
    case "check_run.completed":
      return `ci:check_run:${p.check_run.id}:${p.check_run.head_sha}:${p.check_run.conclusion ?? "none"}`;
    case "check_suite.completed":
    case "workflow_run.completed": {
      const r = p[name];
      const id = r.run_attempt === undefined ? r.id : `${r.id}.${r.run_attempt}`;
      return `ci:${name}:${id}:${r.head_sha}:${r.conclusion ?? "none"}`;
    }
    default:
      return undefined;
  }
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const keyPattern = (key: string) =>
  new RegExp(`^${escape(key).replace(escape("[0-9a-f]{12}"), "[0-9a-f]{12}")}$`);

// A review without submitted_at is dated "now" on each reading: one clock for both readings.
beforeAll(() => {
  vi.useFakeTimers({ toFake: ["Date"], now: new Date("2031-05-06T07:08:09Z") });
});
afterAll(() => {
  vi.useRealTimers();
});

describe("one reading of each webhook event, for the webhook and the processor", () => {
  const all = cases();

  it("covers every event and action intake takes in", () => {
    const seen = new Set(all.map((c) => kindOf(c.name, c.payload)));
    for (const kind of INTAKE_EVENTS) expect(seen, kind).toContain(kind);
    expect(all.length).toBeGreaterThan(329);
  });

  it.each(all)("$title", ({ name, payload }) => {
    const kind = kindOf(name, payload);
    const read = readEvent(name, payload);
    const screened = screenDelivery(name, payload);

    if (!HANDLED.has(kind)) {
      expect(read).toEqual({ ok: false, reason: expect.stringMatching(/ is not handled$/) });
      expect(screened).toEqual({ take: false, reason: read.ok ? "" : read.reason });
      return;
    }
    if (!read.ok) {
      // Only an edit of something else than the body, or a label event without its label.
      expect(read.reason).toMatch(/^body unchanged$|^\S+ without an? (label|assignee)$/);
      expect(screened).toEqual({ take: false, reason: read.reason });
      return;
    }

    const e = read.event;
    expect(e.dedupeKey).toMatch(keyPattern(expectedKey(name, payload)!));
    expect(e.action).toBe(payload.action);
    expect(e.installationId).toBe(payload.installation.id);
    if (e.kind === "text") {
      expect(e.trigger.createdKey).toBe(
        `${e.trigger.comment.source}:${{ review: "submitted", issue: "opened", comment: "created" }[e.trigger.what]}`,
      );
      if (e.change.action === "created") expect(e.dedupeKey).toBe(e.trigger.createdKey);
    }

    // The webhook: what it takes in is this reading's, under this reading's key.
    if (screened.take) {
      expect(screened).toMatchObject({
        action: e.action,
        installationId: e.installationId,
        dedupeKey: e.dedupeKey,
        payload: e.payload,
      });
      if (screened.onlyIf && e.kind === "text")
        expect(screened.onlyIf.pendingKey).toBe(e.trigger.createdKey);
    }
    // The processor: the inbox's copy reads as the same trigger under the same keys.
    expect(processorReads(name, e.payload)).toEqual(read);
    // And it is a trimmed copy: a fraction of what GitHub sent.
    expect(JSON.stringify(e.payload).length).toBeLessThan(JSON.stringify(payload).length);
  });

  it("takes in at least one of every event intake handles, once it mentions someone or runs on a conversation's branch", () => {
    const taken = new Set(
      all
        .filter((c) => screenDelivery(c.name, c.payload).take)
        .map((c) => kindOf(c.name, c.payload)),
    );
    for (const kind of INTAKE_EVENTS) expect(taken, kind).toContain(kind);
  });
});

describe("refusing what it cannot read, never throwing", () => {
  const handled = cases().filter(
    (c) => HANDLED.has(kindOf(c.name, c.payload)) && readEvent(c.name, c.payload).ok,
  );

  it.each([
    ["no payload", "issue_comment", null, /^issue_comment\.\? is not handled$/],
    ["a string", "check_suite", "nonsense", /^check_suite\.\? is not handled$/],
    ["an array", "issues", [1, 2], /^issues\.\? is not handled$/],
    ["an action that is not a string", "issues", { action: 5 }, /^issues\.\? is not handled$/],
    [
      "an empty comment event",
      "issue_comment",
      { action: "created" },
      /^unexpected issue_comment\.created payload: issue: /,
    ],
    [
      "an unknown event",
      "marketplace_purchase",
      { action: "created" },
      /^marketplace_purchase is not handled$/,
    ],
    [
      "an unknown action",
      "pull_request",
      { action: "closed" },
      /^pull_request\.closed is not handled$/,
    ],
  ])("%s", (_title, name, payload, reason) => {
    const read = readEvent(name, payload);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.reason).toMatch(reason);
    expect(readDelivery({ event: name, payload })).toEqual(read);
  });

  it.each(["installation", "repository", "sender"])(
    "every handled example without its %s says which field is missing",
    (field) => {
      for (const c of handled) {
        if (field === "sender" && c.name.startsWith("check_")) continue;
        if (field === "sender" && c.name === "workflow_run") continue;
        const p = structuredClone(c.payload);
        delete p[field];
        const read = readEvent(c.name, p);
        expect(read, c.title).toEqual({
          ok: false,
          reason: `unexpected ${kindOf(c.name, p)} payload: ${field}: ${read.ok ? "" : read.reason.split(": ").slice(2).join(": ")}`,
        });
      }
    },
  );

  /** Every path to a value inside `v`, down to `depth`. */
  function paths(v: unknown, depth = 4, at: string[] = []): string[][] {
    if (depth === 0 || v === null || typeof v !== "object") return [at];
    return [at, ...Object.entries(v).flatMap(([k, x]) => paths(x, depth - 1, [...at, k]))];
  }
  function replaced(v: Json, path: string[], value: unknown): unknown {
    if (!path.length) return value;
    const copy = structuredClone(v);
    let o: Json = copy;
    for (const k of path.slice(0, -1)) o = o[k];
    o[path.at(-1)!] = value;
    return copy;
  }

  it("any field of any handled example replaced by anything: a reading or a refusal, the same for both paths", () => {
    const one = fc.constantFrom(...handled).chain((c) =>
      fc.record({
        c: fc.constant(c),
        path: fc.constantFrom(...paths(c.payload)),
        value: fc.anything({ withNullPrototype: true, withBigInt: false }),
      }),
    );
    fc.assert(
      fc.property(one, ({ c, path, value }) => {
        const payload = replaced(c.payload, path, value);
        const read = readEvent(c.name, payload);
        const screened = screenDelivery(c.name, payload);
        if (!read.ok) {
          expect(read.reason).toMatch(/\S/);
          expect(screened).toEqual({ take: false, reason: read.reason });
          return;
        }
        if (screened.take) expect(screened.dedupeKey).toBe(read.event.dedupeKey);
        // Compared as JSON: a mangled date reads as an invalid Date on both sides.
        expect(viaJson(processorReads(c.name, read.event.payload))).toEqual(viaJson(read));
      }),
      { numRuns: 2000 },
    );
  });

  it("anything at all as the payload of a handled event: a refusal or a reading, never a throw", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...new Set(INTAKE_EVENTS.map((k) => k.split(".")[0]!))),
        fc.anything({ withNullPrototype: true, withBigInt: false }),
        (name, payload) => {
          const read = readEvent(name, payload);
          expect(read.ok || read.reason.length > 0).toBe(true);
          expect(() => screenDelivery(name, payload)).not.toThrow();
          expect(() => readDelivery({ event: name, payload })).not.toThrow();
        },
      ),
      { numRuns: 2000 },
    );
  });
});
