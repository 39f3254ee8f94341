#!/usr/bin/env bash
# pam_fingerauth.so in Embedded Swift (mk/module.mk): no Swift runtime, NEEDED libpam and
# libc only. Each layer the module reaches is compiled again, as its own module in Embedded
# mode, from the same files SwiftPM compiles in the normal mode for the tests and the other
# products: FingerAuthCore, FingerAuthLoginDomain, FingerAuthSystem,
# then PAMFingerAuth; the C parts (the helper's spawn, ceil) with gcc; one link with lld.
# Usage: scripts/build-module.sh OUT_DIR   (writes OUT_DIR/pam_fingerauth.so, unstripped)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: build-module.sh OUT_DIR}
work="$out/embedded"
swiftc=$(command -v swiftc)
triple="$(uname -m)-unknown-linux-gnu"
embedded="$(dirname "$(dirname "$(readlink -f "$swiftc")")")/lib/swift/embedded/$triple"
[ -f "$embedded/libswiftUnicodeDataTables.a" ] || {
  echo "build-module: this toolchain has no Embedded Swift for $triple ($embedded)" >&2
  exit 1
}
rm -rf "$work" && mkdir -p "$work/CSpawn"
# SwiftPM writes CSpawn's module map itself; the Embedded build needs its own.
printf 'module CSpawn {\n    header "%s/Sources/CSpawn/include/fa_spawn.h"\n    export *\n}\n' "$PWD" \
  > "$work/CSpawn/module.modulemap"

flags=(-target "$triple" -enable-experimental-feature Embedded -wmo -parse-as-library -Osize
  -swift-version 6 -package-name FingerAuth -Xcc -fPIC -Xfrontend -function-sections
  -Xllvm -enable-machine-outliner
  -I Sources/CSystem -I Sources/CPAM -I "$work/CSpawn" -I "$work")
objects=()
for layer in FingerAuthCore FingerAuthLoginDomain FingerAuthSystem PAMFingerAuth; do
  mapfile -t sources < <(find "Sources/$layer" -name '*.swift' | sort)
  "$swiftc" "${flags[@]}" -module-name "$layer" -emit-module -emit-module-path "$work/$layer.swiftmodule" \
    -emit-object -o "$work/$layer.o" "${sources[@]}"
  objects+=("$work/$layer.o")
done
gcc -O2 -Wall -Wextra -fPIC -ffunction-sections -fdata-sections -I Sources/CSpawn/include \
  -c Sources/CSpawn/spawn.c -o "$work/spawn.o"
gcc -O2 -Wall -Wextra -fPIC -fno-builtin -c Sources/PAMFingerAuth/embedded-support.c -o "$work/support.o"
# Never unloaded (nodelete: pam_end's dlclose must not unmap code a host may still be in),
# bound now, read-only relocations, only the pam_sm_* entry points exported, nothing
# undefined that libpam and libc do not define.
clang -shared -fuse-ld=lld -o "$out/pam_fingerauth.so" "${objects[@]}" "$work/spawn.o" "$work/support.o" \
  "$embedded/libswiftUnicodeDataTables.a" -lpam \
  -Wl,-z,nodelete -Wl,-z,now -Wl,-z,relro -Wl,--gc-sections -Wl,--icf=all -Wl,--no-undefined \
  -Wl,--version-script=Sources/PAMFingerAuth/exports.map
