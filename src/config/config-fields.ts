/**
 * The field types more than one section of `.github/tether.yml` uses: names, mentions, logins,
 * dollar amounts and bounded whole numbers, with messages a config author can act on.
 */
import { z } from "zod";

/** An agent's name: lower case letters, digits and single hyphens, as GitHub names go. */
export const NAME_RE = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,38}$/;
/** What addresses an agent: `@` and a GitHub-style name. */
export const MENTION_RE = /^@[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/;

/** An amount of US dollars: more than 0 (the CLI refuses `--max-budget-usd 0`), at most max. */
export const dollars = (max: number) =>
  z
    .number("must be a number of US dollars, like 2.5")
    .gt(0, "must be more than 0")
    .max(max, `must be at most ${max}`);

/** A whole number in [min, max], with messages a config author can act on. */
export const wholeNumber = (min: number, max: number) =>
  z
    .number("must be a number")
    .int("must be a whole number")
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`);

/** A GitHub login; a bot's may end in `[bot]`. */
export const Login = z
  .string()
  .regex(
    /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}(?:\[bot\])?$/,
    "must be a GitHub login (bots may end in [bot])",
  );
