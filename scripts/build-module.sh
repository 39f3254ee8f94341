#!/usr/bin/env bash
# pam_fingerauth.so and fingerauth-pam in Embedded Swift (mk/module.mk): no Swift runtime;
# the module NEEDs libpam and libc only, fingerauth-pam libc only. Each layer they reach is
# compiled again, as its own module in Embedded mode, from the same files SwiftPM compiles
# in the normal mode for the tests and the other products: FingerAuthCore,
# FingerAuthLoginDomain, FingerAuthSystem, then PAMFingerAuth for the module and
# FingerAuthLoginSystem, FingerAuthPAM for fingerauth-pam; the C parts (the spawn, ceil)
# with gcc; one link each with lld.
# Usage: scripts/build-module.sh OUT_DIR
#        (writes OUT_DIR/pam_fingerauth.so and OUT_DIR/fingerauth-pam, unstripped)
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

flags=(-target "$triple" -enable-experimental-feature Embedded -wmo -Osize
  -swift-version 6 -package-name FingerAuth -Xcc -fPIC -Xfrontend -function-sections
  -Xllvm -enable-machine-outliner
  -I Sources/CSystem -I Sources/CPAM -I "$work/CSpawn" -I "$work")
# compile LAYER [library|executable]: one Embedded module from Sources/LAYER.
compile() {
  local layer=$1 kind=${2:-library} sources
  mapfile -t sources < <(find "Sources/$layer" -name '*.swift' | sort)
  local mode=(-parse-as-library -emit-module -emit-module-path "$work/$layer.swiftmodule")
  [ "$kind" = executable ] && mode=()  # main.swift's top-level code
  "$swiftc" "${flags[@]}" "${mode[@]}" -module-name "$layer" -emit-object -o "$work/$layer.o" "${sources[@]}"
}
for layer in FingerAuthCore FingerAuthLoginDomain FingerAuthSystem PAMFingerAuth FingerAuthLoginSystem; do
  compile "$layer"
done
compile FingerAuthPAM executable
gcc -O2 -Wall -Wextra -fPIC -ffunction-sections -fdata-sections -I Sources/CSpawn/include \
  -c Sources/CSpawn/spawn.c -o "$work/spawn.o"
gcc -O2 -Wall -Wextra -fPIC -fno-builtin -c Sources/PAMFingerAuth/embedded-support.c -o "$work/support.o"
shared=("$work/FingerAuthCore.o" "$work/FingerAuthLoginDomain.o" "$work/FingerAuthSystem.o" "$work/spawn.o"
  "$work/support.o")
# The module: never unloaded (nodelete: pam_end's dlclose must not unmap code a host may
# still be in), bound now, read-only relocations, only the pam_sm_* entry points exported,
# nothing undefined that libpam and libc do not define.
clang -shared -fuse-ld=lld -o "$out/pam_fingerauth.so" "$work/PAMFingerAuth.o" "${shared[@]}" \
  "$embedded/libswiftUnicodeDataTables.a" -lpam \
  -Wl,-z,nodelete -Wl,-z,now -Wl,-z,relro -Wl,--gc-sections -Wl,--icf=all -Wl,--no-undefined \
  -Wl,--version-script=Sources/PAMFingerAuth/exports.map
# fingerauth-pam: a position-independent executable over libc, bound now.
clang -fuse-ld=lld -pie -o "$out/fingerauth-pam" "$work/FingerAuthPAM.o" "$work/FingerAuthLoginSystem.o" \
  "${shared[@]}" "$embedded/libswiftUnicodeDataTables.a" \
  -Wl,-z,now -Wl,-z,relro -Wl,--gc-sections -Wl,--icf=all
