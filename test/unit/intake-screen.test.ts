import { describe, expect, it } from "vitest";
import { screenDelivery } from "../../src/intake/webhook.js";
import {
  commentCreated,
  commentDeleted,
  commentEdited,
  issueEdited,
  issueOpened,
} from "../helpers/intake-payloads.js";

const APP = 77;
const where = { repo: "codertocat/hello-world", issueNumber: 3 };

describe("screenDelivery: the webhook's cheap checks", () => {
  it.each([
    {
      name: "a new comment that mentions someone",
      event: "issue_comment",
      payload: commentCreated({ commentId: 11, issueNumber: 3, body: "@tether hi" }),
      expected: {
        take: true,
        action: "created",
        installationId: 1,
        dedupeKey: "comment:11:created",
      },
    },
    {
      name: "a new comment that mentions no one",
      event: "issue_comment",
      payload: commentCreated({ commentId: 11, issueNumber: 3, body: "thanks!" }),
      expected: { take: false, reason: "mentions no one" },
    },
    {
      name: "a mention only inside code",
      event: "issue_comment",
      payload: commentCreated({ commentId: 11, issueNumber: 3, body: "`@tether`" }),
      expected: { take: false, reason: "mentions no one" },
    },
    {
      name: "Tether's own comment",
      event: "issue_comment",
      payload: commentCreated({
        commentId: 11,
        issueNumber: 3,
        body: "@tether /help",
        viaAppId: APP,
      }),
      expected: { take: false, reason: "Tether's own comment" },
    },
    {
      name: "another app's comment (its access is checked later)",
      event: "issue_comment",
      payload: commentCreated({
        commentId: 11,
        issueNumber: 3,
        body: "@tether go",
        viaAppId: APP + 1,
      }),
      expected: { take: true, dedupeKey: "comment:11:created" },
    },
    {
      name: "an edited comment body",
      event: "issue_comment",
      payload: commentEdited({
        commentId: 11,
        issueNumber: 3,
        body: "v2",
        updatedAt: "2030-01-01T00:00:00Z",
      }),
      expected: {
        take: true,
        action: "edited",
        dedupeKey: expect.stringMatching(/^comment:11:edited:2030-01-01T00:00:00Z:[0-9a-f]{12}$/),
        onlyIf: { ...where, pendingKey: "comment:11:created" },
      },
    },
    {
      name: "a deleted comment",
      event: "issue_comment",
      payload: commentDeleted({ commentId: 11, issueNumber: 3, body: "x" }),
      expected: {
        take: true,
        dedupeKey: "comment:11:deleted",
        onlyIf: { ...where, pendingKey: "comment:11:created" },
      },
    },
    {
      name: "a new issue that mentions someone",
      event: "issues",
      payload: issueOpened({ issueNumber: 3, issueId: 99, body: "@tether look" }),
      expected: { take: true, action: "opened", dedupeKey: "issue:99:opened" },
    },
    {
      name: "a new issue that mentions no one",
      event: "issues",
      payload: issueOpened({ issueNumber: 3, issueId: 99, body: "bug" }),
      expected: { take: false, reason: "mentions no one" },
    },
    {
      name: "an edited issue body",
      event: "issues",
      payload: issueEdited({ issueNumber: 3, issueId: 99, body: "new" }),
      expected: {
        take: true,
        action: "edited",
        onlyIf: { ...where, pendingKey: "issue:99:opened" },
      },
    },
  ])("$name", ({ event, payload, expected }) => {
    expect(screenDelivery(event, payload, APP)).toMatchObject(expected);
  });

  it.each([
    [
      "an issue edit that changed only the title",
      "issues",
      { ...issueEdited({ issueNumber: 3, body: "x" }), changes: { title: { from: "t" } } },
      /^body unchanged$/,
    ],
    [
      "a comment edit that changed nothing in the body",
      "issue_comment",
      { ...commentEdited({ commentId: 1, body: "x" }), changes: {} },
      /^body unchanged$/,
    ],
    [
      "a closed issue",
      "issues",
      { ...issueOpened({ issueNumber: 3, body: "@tether" }), action: "closed" },
      /^issues\.closed is not handled$/,
    ],
    [
      "another event",
      "pull_request",
      { ...issueOpened({ issueNumber: 3, body: "@tether" }) },
      /^pull_request is not handled$/,
    ],
    [
      "a payload without an installation",
      "issue_comment",
      { ...commentCreated({ commentId: 1, body: "@tether" }), installation: undefined },
      /^unexpected issue_comment\.created payload: installation: /,
    ],
    [
      "a comment without an id",
      "issue_comment",
      (() => {
        const p = commentCreated({ commentId: 1, body: "@tether" });
        delete p.comment.id;
        return p;
      })(),
      /^unexpected issue_comment\.created payload: comment\.id: /,
    ],
    ["no payload at all", "issue_comment", null, /^issue_comment\.\? is not handled$/],
  ])("skips %s", (_name, event, payload, reason) => {
    const s = screenDelivery(event, payload, APP);
    expect(s.take).toBe(false);
    if (!s.take) expect(s.reason).toMatch(reason);
  });

  it("keeps only what intake reads: the stored payload is a fraction of GitHub's", () => {
    const full = commentCreated({ commentId: 11, issueNumber: 3, body: "@tether hi" });
    const s = screenDelivery("issue_comment", full, APP);
    expect(s.take).toBe(true);
    if (!s.take) return;
    expect(s.payload).toMatchObject({
      comment: { id: 11, body: "@tether hi", user: { login: "Codertocat", type: "User" } },
    });
    expect(
      (s.payload as unknown as { issue: Record<string, unknown> }).issue.labels,
    ).toBeUndefined();
    expect(JSON.stringify(s.payload).length).toBeLessThan(JSON.stringify(full).length / 5);
  });

  it("gives two different edits of a comment different dedupe keys, and the same edit redelivered the same one", () => {
    const a = screenDelivery(
      "issue_comment",
      commentEdited({ commentId: 5, body: "one", updatedAt: "2030-01-01T00:00:00Z" }),
      APP,
    );
    const b = screenDelivery(
      "issue_comment",
      commentEdited({ commentId: 5, body: "two", updatedAt: "2030-01-01T00:00:00Z" }),
      APP,
    );
    const a2 = screenDelivery(
      "issue_comment",
      commentEdited({ commentId: 5, body: "one", updatedAt: "2030-01-01T00:00:00Z" }),
      APP,
    );
    expect(a.take && b.take && a.dedupeKey !== b.dedupeKey).toBe(true);
    expect(a).toEqual(a2);
  });
});
