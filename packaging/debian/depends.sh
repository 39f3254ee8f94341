#!/usr/bin/env bash
# Prints the Depends: value for the ELF files under a staged tree: every NEEDED library
# resolved to the Debian package that ships it (dpkg -S), with the installed upstream
# version as the minimum. Usage: depends.sh STAGE_DIR
set -euo pipefail
stage=$1
declare -A packages=()
cache=$(ldconfig -p)  # read once: a reader that stops early would SIGPIPE under pipefail
while IFS= read -r -d '' file; do
  readelf -h "$file" >/dev/null 2>&1 || continue  # ELF files only
  for lib in $(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(awk -v l="$lib" '$1 == l && /x86-64/ && !found { print $NF; found = 1 }' <<< "$cache")
    [ -n "$path" ] || { echo "depends.sh: $lib (needed by $file) not found" >&2; exit 1; }
    owner=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null || dpkg -S "/lib/${path#/usr/lib/}" 2>/dev/null || true)
    [ -n "$owner" ] || { echo "depends.sh: no package ships $path" >&2; exit 1; }
    pkg=${owner%%:*}
    packages[$pkg]=1
  done
done < <(find "$stage" -type f -print0)
out=()
for pkg in $(printf '%s\n' "${!packages[@]}" | sort); do
  version=$(dpkg-query -W -f='${Version}' "$pkg")
  out+=("$pkg (>= ${version%-*})")
done
(IFS=,; echo "${out[*]}" | sed 's/,/, /g')
