import { describe, expect, it } from "vitest";
import { describeError, isRetryable } from "../../src/github/errors.js";

const httpError = (status: number, headers: Record<string, string> = {}) =>
  Object.assign(new Error(`HTTP ${status}`), { name: "HttpError", status, response: { headers } });

describe("isRetryable", () => {
  it.each([
    ["a network failure (no status)", new Error("ECONNRESET"), true],
    ["502", httpError(502), true],
    ["429", httpError(429), true],
    ["403 with the quota used up", httpError(403, { "x-ratelimit-remaining": "0" }), true],
    ["403 with retry-after", httpError(403, { "retry-after": "60" }), true],
    ["403 forbidden", httpError(403), false],
    ["404", httpError(404), false],
    ["422", httpError(422), false],
  ])("%s → %s", (_name, err, retry) => {
    expect(isRetryable(err)).toBe(retry);
  });
});

describe("describeError", () => {
  it("says what failed, with the HTTP status", () => {
    expect(describeError(httpError(503))).toBe("HttpError: HTTP 503 (HTTP 503)");
    expect(describeError("plain")).toBe("plain");
  });

  it("never carries a credential into logs or the inbox", () => {
    const text = describeError(
      new Error(
        'no match {"authorization":"token ghs_abcDEF123456","x":"Bearer abc.def-123456789"} jwt eyJhbGciOi.eyJpYXQiOjE.c2lnbmF0dXJl github_pat_11ABCDEF_xyz',
      ),
    );
    expect(text).not.toMatch(/ghs_abc|abc\.def-123|eyJhbGciOi\.|github_pat_11ABC/);
    expect(text).toContain("[redacted]");
  });
});
