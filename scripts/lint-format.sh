#!/usr/bin/env bash
# `swift format lint --strict` with the checked-in .swift-format, on the Swift files changed
# since the commit that added .swift-format, plus uncommitted and untracked files: on main
# too (where the merge base with main is HEAD itself, and a diff against it would check
# nothing that is committed). The tree is not reformatted in one sweep; each file meets the
# format once someone changes it. Without that commit in the history (a shallow clone) the
# base is the merge base with origin/main (or main). LINT_BASE=<commit> lints against
# another base; `make format` rewrites the same files in place. With no git checkout or no
# changed file it says so.
# Usage: scripts/lint-format.sh [--fix]
set -uo pipefail
cd "$(dirname "$0")/.."
mode=lint
[ "${1:-}" = "--fix" ] && mode=format
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "lint-format: not a git checkout, nothing to compare"
  exit 0
fi
base=${LINT_BASE:-}
if [ -z "$base" ]; then
  base=$(git log --diff-filter=A --format=%H -- .swift-format 2>/dev/null | tail -1)
fi
if [ -z "$base" ]; then
  for ref in origin/main main; do
    base=$(git merge-base HEAD "$ref" 2>/dev/null) && break
  done
fi
mapfile -t files < <(
  { [ -n "$base" ] && git diff --name-only --diff-filter=ACMR "$base" -- '*.swift'
    git ls-files --others --exclude-standard -- '*.swift'; } | sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done)
if [ ${#files[@]} -eq 0 ]; then
  echo "lint-format: no changed Swift file since ${base:0:12}"
  exit 0
fi
if [ "$mode" = format ]; then
  swift format format --in-place --configuration .swift-format "${files[@]}"
  echo "lint-format: formatted ${#files[@]} changed Swift file(s)"
  exit 0
fi
if ! out=$(swift format lint --strict --configuration .swift-format "${files[@]}" 2>&1); then
  echo "lint-format: ${#files[@]} changed Swift file(s) do not meet .swift-format ('make format' fixes most):"
  echo "$out" | head -60 | sed 's/^/  /'
  exit 1
fi
echo "lint-format: ${#files[@]} changed Swift file(s) meet .swift-format"
