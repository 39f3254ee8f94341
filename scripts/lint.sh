#!/usr/bin/env bash
# House rule 2: no trap in code that runs inside sudo/sshd or for it. Fails on force
# unwraps (`x!`, `x!.y`), `try!`, `as!`, `fatalError`, `precondition`, `preconditionFailure`,
# and `unsafelyUnwrapped` in Sources/ (the module, the login helper and everything they link;
# the CLI and the server are held to the same rule). `!=`, `!x` (negation) and comments pass.
set -uo pipefail
cd "$(dirname "$0")/.."
pattern='try!|as!|fatalError\(|precondition\(|preconditionFailure\(|assertionFailure\(|unsafelyUnwrapped|([A-Za-z0-9_)]|\])!([.)( ,]|$)'
hits=$(grep -rnE "$pattern" --include='*.swift' Sources | grep -vE '^\S+:[0-9]+:\s*//' | grep -v '!=' )
if [ -n "$hits" ]; then
  echo "lint: traps in Sources/ (each one can kill a user's sudo or sshd):"
  echo "$hits" | sed 's/^/  /'
  exit 1
fi
echo "lint: no force unwrap, try!, as!, fatalError or precondition in $(find Sources -name '*.swift' | wc -l) Swift files"
