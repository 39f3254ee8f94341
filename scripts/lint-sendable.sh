#!/usr/bin/env bash
# Every `@unchecked Sendable` in Sources/ and Tests/ says why it is safe: the comment block
# right above the declaration holds a line with "`@unchecked Sendable`:" and the reason
# (which lock guards what, or why nothing changes after init). Swift 6 language mode checks
# everything else; these are the places where the compiler takes our word.
set -uo pipefail
cd "$(dirname "$0")/.."
bad=$(find Sources Tests -name '*.swift' -print0 | xargs -0 awk '
  FNR == 1 { delete above; n = 0 }
  /@unchecked Sendable/ && !/^[[:space:]]*\/\// {
    ok = 0
    for (i = n; i > 0; i--) {
      line = above[i]
      if (line !~ /^[[:space:]]*(\/\/|@)/) break
      if (line ~ /`@unchecked Sendable`:/) { ok = 1; break }
    }
    if (!ok) print FILENAME ":" FNR ": " $0
  }
  { above[++n] = $0 }')
if [ -n "$bad" ]; then
  echo "lint: @unchecked Sendable without a \"\`@unchecked Sendable\`: why\" comment above it:"
  echo "$bad" | sed 's/^/  /'
  exit 1
fi
echo "lint: every @unchecked Sendable says why it is safe"
