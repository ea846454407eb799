/**
 * The process logger blanks Tether's secrets and token-shaped strings wherever they appear in a
 * line, not just in the fields its redact paths name: a run's failure detail can quote the CLI
 * or the API, and that quote can hold anything the agent printed.
 */
import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";

const pem = generateKeyPairSync("rsa", { modulusLength: 1024 })
  .privateKey.export({ type: "pkcs1", format: "pem" })
  .toString();
const webhookSecret = "whsec-log-drill-0123456789";
const apiKey = "sk-ant-api03-logdrill0123456789abcdef";
const token = "ghs_0123456789abcdefghijABCDEFGHIJ012345";

describe("the process logger", () => {
  it("blanks secrets and token shapes in every field and in the message", () => {
    const lines: string[] = [];
    const secrets = new Set([webhookSecret]);
    const log = createLogger("info", { write: (l: string) => void lines.push(l) }, { secrets });
    secrets.add(pem); // read later, like a PRIVATE_KEY_PATH file
    log.info(
      {
        kind: "failed",
        detail: `the API said: ${apiKey} ${webhookSecret} ${pem}`,
        nested: { t: token },
      },
      `claude run finished (${webhookSecret})`,
    );
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    for (const s of [
      webhookSecret,
      apiKey,
      token,
      ...pem.split("\n").filter((l) => l.length >= 16),
    ])
      expect(line).not.toContain(s);
    expect(JSON.parse(line)).toMatchObject({
      kind: "failed",
      msg: "claude run finished ([redacted])",
    });
  });
});
