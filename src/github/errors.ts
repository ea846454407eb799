import { redactShapes } from "../core/redact.js";

/** The HTTP status of an Octokit RequestError (or anything carrying `status`). */
export function httpStatusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === "number" ? status : undefined;
}

/**
 * Whether trying again later may succeed: network failures, timeouts, 5xx, rate limits (429,
 * or 403 with an exhausted quota). Other 4xx answers (the issue is gone, the app lost access)
 * will not change by waiting.
 */
export function isRetryable(err: unknown): boolean {
  const status = httpStatusOf(err);
  if (status === undefined) return true;
  if (status >= 500 || status === 408 || status === 429) return true;
  if (status === 403) {
    const headers = (err as { response?: { headers?: Record<string, string | undefined> } })
      .response?.headers;
    return headers?.["x-ratelimit-remaining"] === "0" || headers?.["retry-after"] !== undefined;
  }
  return false;
}

/**
 * GitHub's refusal of a draft pull request where the plan has none (private repositories on
 * Free and Pro): 422, "Validation Failed", with the custom error "Draft pull requests are not
 * supported in this repository." Octokit keeps the body in `response.data` and puts the errors
 * in its message too; either is enough.
 */
export function isDraftRefusal(err: unknown): boolean {
  if (httpStatusOf(err) !== 422) return false;
  const said = /draft pull requests are not supported/i;
  const data = (err as { response?: { data?: { errors?: unknown } } }).response?.data;
  const errors = Array.isArray(data?.errors) ? (data.errors as unknown[]) : [];
  return (
    errors.some((e) => said.test(String((e as { message?: unknown } | null)?.message ?? ""))) ||
    said.test(err instanceof Error ? err.message : "")
  );
}

/**
 * One line for logs and `webhook_deliveries.error`: name, message, HTTP status. Anything that
 * looks like a credential is blanked: some errors echo the request, headers included.
 */
export function describeError(err: unknown): string {
  const text =
    err instanceof Error
      ? `${err.name}: ${err.message}${httpStatusOf(err) !== undefined ? ` (HTTP ${httpStatusOf(err)})` : ""}`
      : String(err);
  return redactSecrets(text);
}

/**
 * Credentials of every known shape (core's one list, src/core/redact.ts), then whatever follows
 * "token", "bearer" or "basic" (an echoed header of a shape not known), and any GitHub token
 * prefix left with a short body.
 */
export function redactSecrets(text: string): string {
  return redactShapes(text)
    .replace(/\b(token|bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{8,}/gi, "$1$2[redacted]")
    .replace(/\b(gh[pousr]_|github_pat_)[A-Za-z0-9_.-]+/g, "$1[redacted]");
}
