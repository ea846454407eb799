/**
 * The sh scripts a key's checkout runs, each in one sandbox (sandboxed-git.ts): look at it,
 * fetch from the mirror, clone, move it, take the agent's work out, housekeeping. `$ORIGIN` is
 * the mirror, `$OUT` a host directory a script may write into; each prints `key=value` lines.
 */

const OPERATION_MARKERS =
  "MERGE_HEAD rebase-merge rebase-apply CHERRY_PICK_HEAD REVERT_HEAD BISECT_LOG";

/**
 * What the checkout is like (args: target branch, upstream ref). Exit 3: not a git checkout.
 * `git status` comes last, after a marker, since it prints file names.
 */
export const STATE = `
target=$1; upstream=$2
emit() { printf '%s=%s\\n' "$1" "$2"; }
gd=$(git rev-parse --git-dir 2>/dev/null) || exit 3
t=; u=
refs=$(git for-each-ref --format='%(refname) %(objectname)' "refs/heads/$target" "$upstream")
while IFS=' ' read -r name sha; do
  [ "$name" = "refs/heads/$target" ] && t=$sha
  [ "$name" = "$upstream" ] && u=$sha
done <<EOF
$refs
EOF
emit target_sha "$t"
emit upstream_sha "$u"
if [ -n "$t" ] && [ -n "$u" ] && [ "$t" != "$u" ]; then
  c=$(git rev-list --left-right --count "$t...$u") || exit 4
  emit counts "$c"
fi
op=0
for m in ${OPERATION_MARKERS}; do [ -e "$gd/$m" ] && op=1; done
emit operation "$op"
if [ -n "$ORIGIN" ] && [ "$(git config --get remote.origin.url)" != "$ORIGIN" ]; then
  git remote set-url origin "$ORIGIN" 2>/dev/null || git remote add origin "$ORIGIN"
  emit repointed 1
fi
printf '@status\\n'
git status --porcelain=v2 --branch --no-ahead-behind --untracked-files=no -z || exit 5
`;

/** Fetch from the mirror, then STATE (args: target, upstream, pull request number or ""). */
export const FETCH = `
pr=$3
git fetch --quiet --prune --no-tags --no-recurse-submodules "$ORIGIN" '+refs/heads/*:refs/remotes/origin/*' \${pr:+"+refs/pull/$pr/head:refs/pull/$pr/head"} || exit 6
${STATE}`;

/** A first clone from the mirror into the (empty) working directory, then STATE. */
export const CLONE = `
pr=$3; head=$1
if [ -n "$pr" ]; then
  git clone --quiet --no-hardlinks --no-tags --no-checkout "--config=remote.origin.fetch=+refs/pull/$pr/head:refs/pull/$pr/head" -- "$ORIGIN" . || exit 6
  git checkout --quiet --no-track -B "$head" "refs/pull/$pr/head" || exit 7
else
  git clone --quiet --no-hardlinks --no-tags -- "$ORIGIN" . || exit 6
  if [ "$(git symbolic-ref --quiet --short HEAD)" != "$head" ]; then
    git checkout --quiet --no-track -b "$head" "$2" || exit 7
  fi
fi
${STATE}`;

/** Moves the plan allows (args: ff|create, target, upstream). */
export const MOVE = `
if [ "$1" = ff ]; then exec git merge --ff-only --quiet "$3"; fi
exec git checkout --quiet --no-track -b "$2" "$3"
`;

/**
 * After a turn: the agent's work as one commit on `branch` (args: branch, upstream ref), and a
 * bundle of it for Tether. Everything the checkout holds beyond `base` (the last commit it
 * shares with upstream: uncommitted files, untracked ones git does not ignore, commits the
 * agent made itself) becomes one commit whose parent is `base`, authored by Tether
 * ($GIT_AUTHOR_*), with the agent's own message if it made one commit, else $OUT/message; the
 * lines of $OUT/trailers close it. The checkout then stands on that commit, on `branch`: index
 * and files are exactly its tree, so nothing is checked out and nothing of the agent's is lost.
 *
 * Nothing here is trusted by what runs next: a filter or a hook of the checkout's own could
 * make this script report anything. Tether checks the commit it takes from the bundle itself.
 */
export const COLLECT = `
branch=$1; upstream=$2
emit() { printf '%s=%s\\n' "$1" "$2"; }
gd=$(git rev-parse --git-dir 2>/dev/null) || exit 3
for m in ${OPERATION_MARKERS}; do
  if [ -e "$gd/$m" ]; then emit state operation-in-progress; exit 0; fi
done
tip=$(git rev-parse --quiet --verify 'HEAD^{commit}') || { emit state no-commit; exit 0; }
up=$(git rev-parse --quiet --verify "$upstream^{commit}") || { emit state no-upstream; exit 0; }
base=$(git merge-base "$tip" "$up") || { emit state unrelated; exit 0; }
emit base "$base"
git add --all . || exit 5
tree=$(git write-tree) || exit 5
if [ "$tree" = "$(git rev-parse "$base^{tree}")" ]; then emit state unchanged; exit 0; fi
n=$(git rev-list --count "$base..$tip") || exit 5
emit agent_commits "$n"
{
  if [ "$n" -eq 1 ]; then git log -1 --format=%B "$tip"
  elif [ "$n" -gt 1 ]; then sed -n 1p "$OUT/message"; echo; git log --reverse --format='- %s' "$base..$tip"
  else cat "$OUT/message"; fi
} | git stripspace > "$OUT/commit-message" || exit 5
if [ -s "$OUT/trailers" ]; then { echo; cat "$OUT/trailers"; } >> "$OUT/commit-message"; fi
commit=$(git commit-tree "$tree" -p "$base" -F "$OUT/commit-message") || exit 6
git update-ref -m "tether: the turn's changes" "refs/heads/$branch" "$commit" || exit 7
git symbolic-ref HEAD "refs/heads/$branch" || exit 7
git bundle create --quiet "$OUT/changes.bundle" "refs/heads/$branch" "^$base" || exit 8
emit commit "$commit"
emit state committed
`;

/**
 * After a publish through GitHub's API (args: branch, local commit, GitHub's commit, the mirror's
 * ref that holds it, where the checkout keeps that ref): GitHub's commit has the same tree as the
 * one COLLECT made, under another id. Fetch it from the mirror and move the branch onto it, only
 * if the branch is still at the local commit and the trees match, so index and files stay as
 * they are and nothing of the agent's is lost.
 */
export const ADOPT = `
branch=$1; local=$2; theirs=$3; src=$4; dst=$5
emit() { printf '%s=%s\\n' "$1" "$2"; }
git rev-parse --git-dir >/dev/null 2>&1 || exit 3
git fetch --quiet --no-tags --no-recurse-submodules "$ORIGIN" "+$src:$dst" || exit 6
lt=$(git rev-parse --quiet --verify "$local^{tree}") || { emit state moved; exit 0; }
tt=$(git rev-parse --quiet --verify "$theirs^{tree}") || { emit state missing; exit 0; }
if [ "$lt" != "$tt" ]; then emit state different; exit 0; fi
git update-ref -m "tether: the turn's commit as GitHub made it" "refs/heads/$branch" "$theirs" "$local" 2>/dev/null || { emit state moved; exit 0; }
emit state adopted
`;

export const MAINTAIN = `git rev-parse --git-dir >/dev/null 2>&1 || exit 3
exec git gc --auto --quiet`;

/**
 * Before a plan turn (`/plan`): the checkout as it stands, to be put back after the run (see
 * PLAN_RESTORE). Prints HEAD's commit, the branch HEAD names (empty when detached) and a tree of
 * every file git does not ignore, uncommitted and untracked ones included, written with a
 * scratch index so the checkout's own index is untouched. The scratch index starts as a copy of
 * the real one (only changed files are hashed again) with its time kept (`cp -p`): git trusts an
 * entry's size and time only when the index is newer than the file, and a fresh copy would be.
 */
export const PLAN_HOLD = `
emit() { printf '%s=%s\\n' "$1" "$2"; }
gd=$(git rev-parse --git-dir 2>/dev/null) || exit 3
head=$(git rev-parse --quiet --verify 'HEAD^{commit}') || { emit state no-commit; exit 0; }
ref=$(git symbolic-ref --quiet HEAD) || ref=
idx="$gd/tether-plan-index"
cp -p "$(git rev-parse --git-path index)" "$idx" 2>/dev/null || rm -f "$idx"
GIT_INDEX_FILE="$idx" git add --all . || exit 5
tree=$(GIT_INDEX_FILE="$idx" git write-tree) || exit 5
rm -f "$idx"
emit head "$head"
emit ref "$ref"
emit tree "$tree"
emit state held
`;

/**
 * After a plan turn: the checkout exactly as PLAN_HOLD saw it (its head, ref and tree). Whatever
 * the run did (files written through a shell, commits, a branch switched, a merge begun) is
 * undone, so no later turn publishes it; what the checkout held before the plan stays.
 * (Args: "plan-restore", then those three; the first names the step in the log.)
 */
export const PLAN_RESTORE = `
head=$2; ref=$3; tree=$4
gd=$(git rev-parse --git-dir 2>/dev/null) || exit 3
for m in ${OPERATION_MARKERS}; do rm -rf "$gd/$m"; done
if [ -n "$ref" ]; then
  git update-ref "$ref" "$head" && git symbolic-ref HEAD "$ref" || exit 6
else
  git update-ref --no-deref HEAD "$head" || exit 6
fi
git reset --quiet --hard "$head" || exit 6
idx="$gd/tether-plan-index"
rm -f "$idx"
GIT_INDEX_FILE="$idx" git read-tree "$tree" || exit 7
GIT_INDEX_FILE="$idx" git checkout-index --all --force || exit 7
GIT_INDEX_FILE="$idx" git clean -fdq || exit 7
rm -f "$idx"
printf 'state=restored\\n'
`;
