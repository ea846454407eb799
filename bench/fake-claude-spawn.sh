#!/bin/sh
# A stand-in Claude CLI for bench/turn-latency.ts. A shell script, so its own start-up (a few
# milliseconds) hardly adds to what is measured: it notes the moment it was spawned, then answers
# like a one-turn run. The log path comes from CLAUDE_CODE_BENCH_SPAWN_LOG (a CLAUDE_CODE_*
# variable, so the runner's environment policy lets it through).
case " $* " in
  *" --version "*) echo "2.1.197 (Claude Code)"; exit 0 ;;
  *" --help "*) printf 'Usage: claude [options]\n  -r, --resume [value]  Resume a conversation\n'; exit 0 ;;
esac
[ -n "$CLAUDE_CODE_BENCH_SPAWN_LOG" ] && echo "$(date +%s%3N) $PWD" >> "$CLAUDE_CODE_BENCH_SPAWN_LOG"
sid=""
prev=""
for a in "$@"; do
  [ "$prev" = "--resume" ] && sid="$a"
  prev="$a"
done
[ -n "$sid" ] || sid=$(cat /proc/sys/kernel/random/uuid)
cat > /dev/null
# A transcript where the real CLI files it, so the next turn can resume (after the spawn is noted).
if [ -n "$HOME" ]; then
  proj="$HOME/.claude/projects/$(printf '%s' "$PWD" | tr -c 'A-Za-z0-9' '-')"
  mkdir -p "$proj" && printf '{"type":"user","sessionId":"%s","cwd":"%s"}\n' "$sid" "$PWD" >> "$proj/$sid.jsonl"
fi
printf '{"type":"system","subtype":"init","cwd":"%s","session_id":"%s","tools":[],"model":"claude-sonnet-4-5","permissionMode":"acceptEdits","claude_code_version":"2.1.197"}\n' "$PWD" "$sid"
printf '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"duration_ms":1,"result":"ok","session_id":"%s","total_cost_usd":0,"terminal_reason":"completed","usage":{"input_tokens":1,"output_tokens":1,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}\n' "$sid"
