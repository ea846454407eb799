import { pino, type Logger } from "pino";
import { redact } from "./core/redact.js";

export type { Logger };

/**
 * Paths pino blanks in every log line. Tokens and keys must never reach logs even when a
 * caller logs a whole object (an Octokit error carries request headers, for example).
 */
const REDACT = [
  "token",
  "*.token",
  "privateKey",
  "*.privateKey",
  "secret",
  "*.secret",
  "password",
  "*.password",
  "headers.authorization",
  "*.headers.authorization",
  "*.*.headers.authorization",
  "request.headers.authorization",
  "err.request.headers.authorization",
  "env",
  "*.env",
  // Probot's HTTP access log: the dashboard's session cookie is a credential too.
  "req.headers.cookie",
  'res.headers["set-cookie"]',
];

/** A `?token=` (the dashboard's sign-in link) or `?sig=` (a live link) in a logged URL loses its value, nothing else. */
function censor(value: unknown, path: string[]): unknown {
  if (path.at(-1) === "url" && typeof value === "string") {
    return value.replace(/([?&](?:access_token|token|sig)=)[^&#]*/gi, "$1[redacted]");
  }
  return "[redacted]";
}

export interface LoggerOptions {
  /**
   * Values blanked wherever they appear in a line, read at every write (so a key read after
   * the logger was made still counts). Token-shaped strings are blanked regardless. The paths
   * above only cover fields known to hold credentials; this covers the rest, e.g. a run's
   * failure detail quoting what the CLI or the API said.
   */
  secrets?: Iterable<string | undefined>;
}

export function createLogger(
  level: string,
  destination?: pino.DestinationStream,
  opts: LoggerOptions = {},
): Logger {
  const secrets = opts.secrets ?? [];
  return pino(
    {
      name: "tether",
      level,
      redact: { paths: [...REDACT, "req.url"], censor },
      formatters: { level: (label) => ({ level: label }) },
      hooks: { streamWrite: (line) => redact(line, secrets) },
    },
    destination,
  );
}
