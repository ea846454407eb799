import nock from "nock";
import { afterEach, beforeEach, expect } from "vitest";

export const API = "https://api.github.com";

/**
 * nock for every test of the file: no real network, and after each test, fail on a request no
 * interceptor matched and on an interceptor no request used.
 */
export function useNock(): void {
  const unmatched: string[] = [];
  const onNoMatch = (req: {
    method?: string;
    url?: string;
    href?: string;
    path?: string;
    options?: { method?: string; href?: string; path?: string };
  }) => {
    const method = req.method ?? req.options?.method ?? "?";
    const where = req.url ?? req.href ?? req.path ?? req.options?.href ?? req.options?.path;
    unmatched.push(`${method} ${where ?? JSON.stringify(req).slice(0, 200)}`);
  };
  beforeEach(() => {
    nock.disableNetConnect();
    nock.emitter.on("no match", onNoMatch);
  });
  afterEach(() => {
    nock.emitter.removeListener("no match", onNoMatch);
    const pending = nock.pendingMocks();
    const missing = unmatched.splice(0);
    nock.cleanAll();
    expect(missing, "requests no interceptor matched").toEqual([]);
    expect(pending, "interceptors no request used").toEqual([]);
  });
}

/** Interceptors for the GitHub API calls intake makes. Each is expected exactly once. */
export function github(owner = "Codertocat", repo = "Hello-World") {
  const api = nock(API);
  const base = `/repos/${owner}/${repo}`;
  const configPath = `/contents/.github%2Ftether.yml`;
  return {
    api,
    token(installationId = 1) {
      api
        .post(`/app/installations/${installationId}/access_tokens`)
        .reply(201, { token: "ghs_test", expires_at: "2099-01-01T00:00:00Z", permissions: {} });
      return this;
    },
    /** No `.github/tether.yml` in the repository nor in the org's `.github` repository. */
    noConfig() {
      api.get(`${base}${configPath}`).reply(404, { message: "Not Found" });
      api.get(`/repos/${owner}/.github${configPath}`).reply(404, { message: "Not Found" });
      return this;
    },
    config(yaml: string, where = base) {
      api
        .get(`${where}${configPath}`)
        .reply(200, yaml, { "content-type": "text/plain; charset=utf-8" });
      return this;
    },
    permission(username: string, roleName: string, permission = roleName) {
      api
        .get(`${base}/collaborators/${username}/permission`)
        .reply(200, { permission, role_name: roleName, user: { login: username } });
      return this;
    },
    reactToComment(commentId: number) {
      api
        .post(`${base}/issues/comments/${commentId}/reactions`, { content: "eyes" })
        .reply(201, { id: 1, content: "eyes" });
      return this;
    },
    /** The 👀 on a comment on a pull request's diff (its own REST route). */
    reactToReviewComment(commentId: number) {
      api
        .post(`${base}/pulls/comments/${commentId}/reactions`, { content: "eyes" })
        .reply(201, { id: 1, content: "eyes" });
      return this;
    },
    reactToIssue(issueNumber: number) {
      api
        .post(`${base}/issues/${issueNumber}/reactions`, { content: "eyes" })
        .reply(201, { id: 1, content: "eyes" });
      return this;
    },
    /** The line comments submitted with a review (GET …/pulls/{n}/reviews/{id}/comments). */
    reviewLineComments(pullNumber: number, reviewId: number, comments: unknown[] = []) {
      api
        .get(`${base}/pulls/${pullNumber}/reviews/${reviewId}/comments`)
        .query(true)
        .reply(200, comments);
      return this;
    },
    /** A reply on the issue; its body lands in `bodies` for the test to check. */
    reply(issueNumber: number) {
      const bodies: string[] = [];
      api
        .post(`${base}/issues/${issueNumber}/comments`, (b: { body: string }) => {
          bodies.push(b.body);
          return true;
        })
        .reply(201, { id: 9001 });
      return { bodies };
    },
  };
}
