#!/usr/bin/env bash
# Runs each fuzz target for SECONDS on a fresh working corpus seeded from Tests/fuzz/corpus,
# prints executions per target, and fails on the first crash (its input stays in build/fuzz).
# Usage: scripts/fuzz.sh FUZZER SECONDS TARGET...
set -uo pipefail
fuzzer=$1 seconds=$2
shift 2
out=$(dirname "$fuzzer")
status=0
printf '%-24s %12s %10s  %s\n' target executions exec/s result
for target in "$@"; do
  work=$(mktemp -d)
  log=$(mktemp)
  FINGERAUTH_FUZZ_TARGET=$target timeout $((seconds + 60)) "$fuzzer" -max_total_time="$seconds" \
    -print_final_stats=1 -artifact_prefix="$out/$target-" -max_len=4096 \
    "$work" "Tests/fuzz/corpus/$target" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
  rate=$(( ${execs:-0} / seconds ))
  if [ $rc -eq 0 ]; then result=ok; else result="CRASH (see $out/$target-*)"; status=1; tail -30 "$log"; fi
  printf '%-24s %12s %10s  %s\n' "$target" "${execs:-?}" "${rate:-?}" "$result"
  rm -rf "$work" "$log"
done
exit $status
