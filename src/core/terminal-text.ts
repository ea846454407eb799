/**
 * Text someone else wrote (an agent's transcript, a reason a CLI gave), shown on an operator's
 * terminal. A terminal acts on control characters: ESC opens sequences that retitle the window,
 * clear the screen, move the cursor over what was printed, or set the clipboard (OSC 52); C1's
 * CSI (U+009B) does the same in one character; bidirectional controls make a line read otherwise
 * than it is. Each becomes a JSON escape (`\u001b`), so a line of JSON lines stays JSON that reads
 * the same, and other text shows what was there. Line feeds and tabs stay.
 */
const ACTS_ON_A_TERMINAL =
  // eslint-disable-next-line no-control-regex -- matching them is the point
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function escapeForTerminal(text: string): string {
  return text.replace(
    ACTS_ON_A_TERMINAL,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
