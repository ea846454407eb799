/** REST shapes as api.github.com gives them, for nock replies (intake-github.ts) and tests. */
import {
  commentJson,
  commitJson,
  examplePayload,
  reactionJson,
  reviewCommentJson,
  userJson,
  type Json,
  type ReactionContent,
  type ReviewCommentFacts,
} from "./fake-github-shapes.js";

export const API = "https://api.github.com";
const GITHUB = { apiUrl: API, webUrl: "https://github.com" };
const EPOCH = new Date("2026-11-20T12:00:00Z");

/**
 * REST shapes as api.github.com gives them (every field GitHub's description requires), for
 * nock replies: a test overrides only the fields it is about.
 */
export const rest = {
  user(login: string): Json {
    let id = 7;
    for (const ch of login) id = (id * 31 + ch.charCodeAt(0)) % 1_000_000;
    return userJson(GITHUB, login, id + 1, login.endsWith("[bot]") ? "Bot" : "User");
  },
  reaction(content: ReactionContent = "eyes", id = 1): Json {
    return reactionJson(id, rest.user("tether[bot]"), content, EPOCH);
  },
  issueComment(
    repoFull: string,
    issueNumber: number,
    id: number,
    body = "",
    login = "tether[bot]",
  ) {
    return commentJson(GITHUB, repoFull, {
      id,
      issueNumber,
      isPullRequest: false,
      user: rest.user(login),
      body,
      createdAt: EPOCH,
      updatedAt: EPOCH,
      authorAssociation: "NONE",
      reactions: [],
      performedViaApp: null,
    });
  },
  /** GET /repos/{o}/{r}/branches/{branch}. */
  branch(repoFull: string, name: string, sha: string): Json {
    const api = `${API}/repos/${repoFull}`;
    return {
      name,
      commit: commitJson(GITHUB, repoFull, sha, EPOCH),
      _links: {
        self: `${api}/branches/${name}`,
        html: `https://github.com/${repoFull}/tree/${name}`,
      },
      protected: false,
      protection: { enabled: false },
      protection_url: `${api}/branches/${name}/protection`,
    };
  },
  /** POST /repos/{o}/{r}/pulls: an open pull request (GitHub's example, renumbered). */
  pull(repoFull: string, number: number, draft: boolean): Json {
    const template = examplePayload("pull_request", (e) => e.action === "opened")
      .pull_request as Json;
    return {
      ...template,
      number,
      draft,
      state: "open",
      merged_at: null,
      auto_merge: null,
      url: `${API}/repos/${repoFull}/pulls/${number}`,
      html_url: `https://github.com/${repoFull}/pull/${number}`,
    };
  },
  /** GET /app: the app itself, as its JWT sees it (its bot is `<slug>[bot]`). */
  app(slug: string, id = 1): Json {
    return {
      id,
      slug,
      node_id: `A_${id}`,
      client_id: `Iv1.${id.toString(16).padStart(16, "0")}`,
      owner: rest.user("Codertocat"),
      name: slug,
      description: "",
      external_url: "https://example.com",
      html_url: `https://github.com/apps/${slug}`,
      created_at: EPOCH.toISOString(),
      updated_at: EPOCH.toISOString(),
      permissions: { metadata: "read", issues: "write" },
      events: ["issue_comment"],
    };
  },
  reviewComment(
    repoFull: string,
    o: Partial<Omit<ReviewCommentFacts, "user">> & { id: number; user?: string },
  ): Json {
    return reviewCommentJson(GITHUB, repoFull, {
      pullNumber: 1,
      body: "",
      path: "README.md",
      line: 1,
      startLine: null,
      side: "RIGHT",
      commitId: "0123abc0123abc0123abc0123abc0123abc0123",
      createdAt: EPOCH,
      ...o,
      user: rest.user(o.user ?? "octocat"),
    });
  },
};
