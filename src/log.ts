import { pino, type Logger } from "pino";

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
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      name: "tether",
      level,
      redact: { paths: REDACT, censor: "[redacted]" },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}
