import { describe, expect, it } from "vitest";
import { screenDelivery } from "../../src/intake/webhook.js";
import {
  commentCreated,
  commentDeleted,
  commentEdited,
  issueEdited,
  issueOpened,
  issueWorkItem,
  pullWorkItem,
  reviewCommentCreated,
  reviewCommentDeleted,
  reviewCommentEdited,
  reviewSubmitted,
} from "../helpers/intake-payloads.js";

const APP = 77;
const where = { repo: "codertocat/hello-world", repoId: 186853002, issueNumber: 3 };

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
    {
      name: "an edit that adds a mention: taken like a new comment, whether or not the issue has tasks",
      event: "issue_comment",
      payload: commentEdited({
        commentId: 11,
        issueNumber: 3,
        body: "@tether fix it",
        previousBody: "@tethr fix it",
        updatedAt: "2030-01-01T00:00:00Z",
      }),
      expected: {
        take: true,
        action: "edited",
        dedupeKey: expect.stringMatching(/^comment:11:edited:2030-01-01T00:00:00Z:[0-9a-f]{12}$/),
      },
      unconditional: true,
    },
    {
      name: "an edit of a comment that already mentioned the same names",
      event: "issue_comment",
      payload: commentEdited({
        commentId: 11,
        issueNumber: 3,
        body: "@tether fix the build",
        previousBody: "@tether fix teh build",
      }),
      expected: { take: true, onlyIf: { ...where, pendingKey: "comment:11:created" } },
    },
    {
      name: "an issue body edit that adds a mention",
      event: "issues",
      payload: issueEdited({ issueNumber: 3, issueId: 99, body: "@tether look", previousBody: "" }),
      expected: { take: true, action: "edited" },
      unconditional: true,
    },
    {
      name: "a review comment that mentions someone",
      event: "pull_request_review_comment",
      payload: reviewCommentCreated({ commentId: 21, pullNumber: 3, body: "@tether rename" }),
      expected: {
        take: true,
        action: "created",
        installationId: 1,
        dedupeKey: "review_comment:21:created",
      },
    },
    {
      name: "a review comment that mentions no one",
      event: "pull_request_review_comment",
      payload: reviewCommentCreated({ commentId: 21, pullNumber: 3, body: "nit: spacing" }),
      expected: { take: false, reason: "mentions no one" },
    },
    {
      name: "an edited review comment",
      event: "pull_request_review_comment",
      payload: reviewCommentEdited({
        commentId: 21,
        pullNumber: 3,
        body: "@tether v2",
        previousBody: "@tether v1",
        updatedAt: "2030-01-01T00:00:00Z",
      }),
      expected: {
        take: true,
        action: "edited",
        dedupeKey: expect.stringMatching(
          /^review_comment:21:edited:2030-01-01T00:00:00Z:[0-9a-f]{12}$/,
        ),
        onlyIf: { ...where, pendingKey: "review_comment:21:created" },
      },
    },
    {
      name: "a review comment edit that adds a mention",
      event: "pull_request_review_comment",
      payload: reviewCommentEdited({
        commentId: 21,
        pullNumber: 3,
        body: "@tether v2",
        previousBody: "v1",
      }),
      expected: { take: true, action: "edited" },
      unconditional: true,
    },
    {
      name: "a deleted review comment",
      event: "pull_request_review_comment",
      payload: reviewCommentDeleted({ commentId: 21, pullNumber: 3, body: "x" }),
      expected: {
        take: true,
        dedupeKey: "review_comment:21:deleted",
        onlyIf: { ...where, pendingKey: "review_comment:21:created" },
      },
    },
    {
      name: "a review whose body mentions someone",
      event: "pull_request_review",
      payload: reviewSubmitted({ reviewId: 31, pullNumber: 3, body: "@tether address these" }),
      expected: { take: true, action: "submitted", dedupeKey: "review:31:submitted" },
    },
    {
      name: "a review without a body",
      event: "pull_request_review",
      payload: reviewSubmitted({ reviewId: 31, pullNumber: 3, body: null }),
      // Taken only if #3 is an agent's own pull request: checked in Postgres after screening.
      expected: {
        take: true,
        dedupeKey: "review:31:submitted",
        onlyIfConversationPull: { repoId: 186853002, pullNumber: 3 },
      },
    },
    {
      name: "a label added to an issue",
      event: "issues",
      payload: issueWorkItem({
        issueNumber: 3,
        action: "labeled",
        value: "Tether",
        updatedAt: "2030-01-01T00:00:00Z",
      }),
      expected: {
        take: true,
        action: "labeled",
        dedupeKey: "issue:500003:labeled:tether:2030-01-01T00:00:00Z",
      },
      unconditional: true,
    },
    {
      name: "a pull request assigned",
      event: "pull_request",
      payload: pullWorkItem({ issueNumber: 4, action: "assigned", value: "tether-bot" }),
      expected: { take: true, action: "assigned" },
      unconditional: true,
    },
  ] as Array<{
    name: string;
    event: string;
    payload: unknown;
    expected: object;
    /** Taken whatever the issue holds: no `onlyIf` check in Postgres. */
    unconditional?: boolean;
  }>)("$name", ({ event, payload, expected, unconditional }) => {
    const s = screenDelivery(event, payload, APP);
    expect(s).toMatchObject(expected);
    if (unconditional) expect(s).not.toHaveProperty("onlyIf");
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
      "push",
      { ...issueOpened({ issueNumber: 3, body: "@tether" }) },
      /^push is not handled$/,
    ],
    [
      "another action of a handled event",
      "pull_request",
      { ...issueOpened({ issueNumber: 3, body: "@tether" }), action: "opened" },
      /^pull_request\.opened is not handled$/,
    ],
    [
      "a label event without its label",
      "issues",
      { ...issueWorkItem({ issueNumber: 3, action: "labeled", value: "x" }), label: null },
      /^issues\.labeled without a label$/,
    ],
    [
      "an assignment whose issue lacks its number",
      "issues",
      {
        ...issueWorkItem({ issueNumber: 3, action: "assigned", value: "x" }),
        issue: { id: 1, html_url: "u", user: { login: "a", type: "User" }, created_at: "t" },
      },
      /^unexpected issues\.assigned payload: issue\.number: /,
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
    [
      "a dismissed review",
      "pull_request_review",
      { ...reviewSubmitted({ reviewId: 1, body: "@tether" }), action: "dismissed" },
      /^pull_request_review\.dismissed is not handled$/,
    ],
    [
      "a review comment edit that changed nothing in the body",
      "pull_request_review_comment",
      { ...reviewCommentEdited({ commentId: 1, body: "@tether" }), changes: {} },
      /^body unchanged$/,
    ],
    [
      "a review comment without its pull request",
      "pull_request_review_comment",
      { ...reviewCommentCreated({ commentId: 1, body: "@tether" }), pull_request: undefined },
      /^unexpected pull_request_review_comment\.created payload: pull_request: /,
    ],
    [
      "a review comment made by Tether itself",
      "pull_request_review_comment",
      (() => {
        const p = reviewCommentCreated({ commentId: 1, body: "@tether" });
        p.comment.performed_via_github_app = { id: APP };
        return p;
      })(),
      /^Tether's own comment$/,
    ],
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
