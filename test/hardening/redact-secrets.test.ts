import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { redact } from "../../src/core/redact.js";

const pem = generateKeyPairSync("rsa", { modulusLength: 1024 })
  .privateKey.export({ type: "pkcs1", format: "pem" })
  .toString();
const body = pem.split("\n").filter((l) => l && !l.startsWith("-----"));

describe("redact with a multi-line secret (the app's private key)", () => {
  it.each([
    { what: "the whole key", text: `key: ${pem}` },
    { what: "one line of it", text: `found ${body[3]} in memory` },
    { what: "lines of it, re-joined on one line", text: body.slice(2, 6).join(" ") },
    { what: "the key JSON-escaped (a log line)", text: JSON.stringify({ detail: pem }) },
    { what: "the key's body without its armour", text: body.join("\n") },
  ])("blanks $what", ({ text }) => {
    const out = redact(text, [pem]);
    for (const line of body.filter((l) => l.length >= 16)) expect(out).not.toContain(line);
    expect(out).toContain("[redacted]");
  });

  it("leaves other text alone", () => {
    expect(redact("nothing secret here, just words", [pem])).toBe(
      "nothing secret here, just words",
    );
  });
});
