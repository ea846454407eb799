/**
 * useNock() holds every request that reaches an api.github.com interceptor, and the interceptor's
 * reply (static or from a reply function), to GitHub's OpenAPI description.
 */
import { Octokit } from "@octokit/rest";
import nock from "nock";
import { describe, expect, it } from "vitest";
import { API, github, rest, takeNockOpenapiViolations, useNock } from "../helpers/intake-github.js";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

describe("useNock", () => {
  useNock();

  it("records a nock reply missing required fields, and a request GitHub does not take", async () => {
    nock(API)
      .post("/repos/octo/widgets/issues/comments/5/reactions")
      .reply(201, { id: 1, content: "eyes" });
    nock(API)
      .post("/repos/octo/widgets/issues/1/comments")
      .reply(201, rest.issueComment("octo/widgets", 1, 9));
    const octokit = new Octokit({ auth: "ghs_test", log: quiet, request: { retries: 0 } });
    await octokit.rest.reactions.createForIssueComment({
      owner: "octo",
      repo: "widgets",
      comment_id: 5,
      content: "eyes",
    });
    await octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
      owner: "octo",
      repo: "widgets",
      issue_number: 1,
      body: ["not", "text"] as never,
    });
    const found = takeNockOpenapiViolations();
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/reactions 201 .* required property 'node_id'/),
        expect.stringMatching(/reactions 201 .* required property 'user'/),
        expect.stringMatching(/issues\/1\/comments .*request body\/body must be string/),
      ]),
    );
    expect(found).toHaveLength(4);
  });

  it("checks what a reply function returns", async () => {
    nock(API)
      .get("/repos/octo/widgets/collaborators/alice/permission")
      .reply(() => [200, { permission: "write" }]);
    const octokit = new Octokit({ auth: "ghs_test", log: quiet });
    await octokit.rest.repos.getCollaboratorPermissionLevel({
      owner: "octo",
      repo: "widgets",
      username: "alice",
    });
    expect(takeNockOpenapiViolations()).toEqual([
      expect.stringMatching(/permission 200 .* required property 'role_name'/),
      expect.stringMatching(/permission 200 .* required property 'user'/),
    ]);
  });

  it("checks the request of an interceptor that answers with a network error, not a reply", async () => {
    // POST …/comments documents 201 only: a reply checked as "200, no body" would be flagged.
    nock(API).post("/repos/octo/widgets/issues/1/comments").replyWithError("socket hang up");
    const octokit = new Octokit({ auth: "ghs_test", log: quiet, request: { retries: 0 } });
    await expect(
      octokit.rest.issues.createComment({
        owner: "octo",
        repo: "widgets",
        issue_number: 1,
        body: "x",
      }),
    ).rejects.toThrow(/socket hang up/);
    expect(takeNockOpenapiViolations()).toEqual([]);
  });

  it("passes the intake interceptors as they are", async () => {
    github("octo", "widgets").token(7).reactToReviewComment(3).permission("bob", "write");
    const octokit = new Octokit({ auth: "ghs_test", log: quiet });
    await octokit.rest.apps.createInstallationAccessToken({ installation_id: 7 });
    await octokit.rest.reactions.createForPullRequestReviewComment({
      owner: "octo",
      repo: "widgets",
      comment_id: 3,
      content: "eyes",
    });
    await octokit.rest.repos.getCollaboratorPermissionLevel({
      owner: "octo",
      repo: "widgets",
      username: "bob",
    });
    expect(takeNockOpenapiViolations()).toEqual([]);
  });
});
