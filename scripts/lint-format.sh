#!/usr/bin/env bash
# `swift format lint --strict` with the checked-in .swift-format on every Swift file the
# checkout tracks, plus untracked ones. `make format` (--fix) rewrites them in place.
# Usage: scripts/lint-format.sh [--fix]
set -uo pipefail
cd "$(dirname "$0")/.."
mode=lint
[ "${1:-}" = "--fix" ] && mode=format
if git rev-parse --git-dir >/dev/null 2>&1; then
  mapfile -t files < <({ git ls-files -- '*.swift'; git ls-files --others --exclude-standard -- '*.swift'; } |
    sort -u | while read -r f; do [ -f "$f" ] && echo "$f"; done)
else
  mapfile -t files < <(find Sources Tests Package.swift -name '*.swift' -not -path '*/.build/*' | sort)
fi
if [ ${#files[@]} -eq 0 ]; then
  echo "lint-format: no Swift file"
  exit 0
fi
if [ "$mode" = format ]; then
  swift format format --in-place --configuration .swift-format "${files[@]}"
  echo "lint-format: formatted ${#files[@]} Swift file(s)"
  exit 0
fi
if ! out=$(swift format lint --strict --configuration .swift-format "${files[@]}" 2>&1); then
  echo "lint-format: Swift files that do not meet .swift-format ('make format' fixes most):"
  echo "$out" | head -60 | sed 's/^/  /'
  exit 1
fi
echo "lint-format: all ${#files[@]} Swift file(s) meet .swift-format"
