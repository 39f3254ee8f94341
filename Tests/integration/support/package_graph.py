"""The targets Package.swift declares, as `swift package dump-package` prints them (no build)."""

import json
import pathlib
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


def package_targets():
    """{name: {"type": "regular" | "executable" | "system" | "test", "deps": [direct dependencies]}};
    skips the test when the Swift toolchain is not on PATH."""
    swift = shutil.which("swift")
    if swift is None:
        pytest.skip("the Swift toolchain is not on PATH: swift package dump-package cannot run")
    out = subprocess.run([swift, "package", "dump-package"], cwd=REPO, capture_output=True, text=True, timeout=120,
                         check=True).stdout
    found = {}
    for target in json.loads(out)["targets"]:
        names = []
        for dependency in target["dependencies"]:
            (kind, value), = dependency.items()
            names.append(value[0])
        found[target["name"]] = {"type": target["type"], "deps": names}
    return found


def reach(targets, name):
    """Every target `name` depends on, directly or not."""
    seen, todo = set(), list(targets[name]["deps"])
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(targets[current]["deps"])
    return seen


def imports(target):
    """The modules the Swift files of Sources/<target> import (the system's and the standard
    library's left out)."""
    import re
    found = set()
    for path in (REPO / "Sources" / target).rglob("*.swift"):
        found |= set(re.findall(r"^import (\w+)$", path.read_text(), flags=re.M))
    return found - {"Glibc", "Synchronization"}
