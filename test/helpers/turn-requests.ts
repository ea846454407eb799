/**
 * The GitHub requests a turn's own client made, as the GitHub stand-in logged them: REST
 * requests made with a token scoped like the runner's thread client (THREAD_PERMISSIONS, see
 * src/github/scoped-auth.ts) or its Git Data client (pushPermissions), from `fromSeq` on. Intake's requests (its unscoped installation
 * token), the app's token requests (its JWT) and git's (the fetch and push tokens) are not the
 * turn client's. Those answered 200 (or any status but 304) are what the task's
 * `github_requests` (src/github/request-count.ts) must equal; those answered 304 Not Modified,
 * its `github_requests_not_modified`.
 */
import { pushPermissions, THREAD_PERMISSIONS } from "../../src/github/scoped-auth.js";
import type { FakeGitHub, RecordedRequest } from "./fake-github.js";

function isThreadToken(gh: FakeGitHub, token: string | undefined): boolean {
  const grant = token ? gh.tokenGrant(token) : undefined;
  if (!grant) return false;
  const got = grant.permissions;
  const same = (want: Record<string, string>) =>
    Object.keys(got).length === Object.keys(want).length &&
    Object.entries(want).every(([k, v]) => got[k] === v);
  // The thread's client, and the Git Data API's (changes.signedCommits), which the turn's
  // counter counts too.
  return (
    same({ metadata: "read", ...THREAD_PERMISSIONS }) ||
    same(pushPermissions(false)) ||
    same(pushPermissions(true))
  );
}

/** Requests with the turn client's tokens, after the request numbered `fromSeq`. */
export function turnRequests(gh: FakeGitHub, fromSeq: number): RecordedRequest[] {
  return gh.requests.filter(
    (r) => r.seq > fromSeq && r.kind === "rest" && isThreadToken(gh, r.token),
  );
}

/** The stand-in's last request number so far (pass it to turnRequests before a turn). */
export function lastSeq(gh: FakeGitHub): number {
  return gh.requests.at(-1)?.seq ?? 0;
}

/**
 * REST requests made with an installation token after `fromSeq` (intake's and the turn's; not
 * the app's JWT requests for tokens, nor git): what GitHub counts against the installation's
 * rate limit, split into counted ones and the 304s GitHub does not count.
 */
export function installationRequests(
  gh: FakeGitHub,
  fromSeq: number,
): { counted: RecordedRequest[]; notModified: RecordedRequest[] } {
  const made = gh.requests.filter(
    (r) => r.seq > fromSeq && r.kind === "rest" && r.token && gh.tokenGrant(r.token),
  );
  return {
    counted: made.filter((r) => r.status !== 304),
    notModified: made.filter((r) => r.status === 304),
  };
}

/** "GET /route ×2" lines, in order of first appearance. */
export function routeCounts(rs: readonly RecordedRequest[]): string[] {
  const counts = new Map<string, number>();
  for (const r of rs) {
    const k = r.route ?? `${r.method} ${r.path}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...counts].map(([r, n]) => `${r} ×${n}`);
}
