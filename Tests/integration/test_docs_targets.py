"""The source layout (docs/explanation/components.md, "Layout") and docs/ARCHITECTURE.md
against the targets Package.swift declares (`swift package dump-package`): every library,
executable and C bridge is named in both, and neither names a target that does not exist
(such as a target since split up).
No build needed.

    /usr/bin/python3 -m pytest -q -p no:cacheprovider Tests/integration/test_docs_targets.py
"""

import os
import pathlib
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support.package_graph import package_targets  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]

# What reads like a target's name: FingerAuthX, PAMFingerAuth, and in backquotes a C bridge
# (`CPAM`, `CSQLite`; not `CURLOPT_…` or `CAP_…`, which have underscores).
TARGET_LIKE = re.compile(r"\b(?:FingerAuth[A-Z]\w*|PAMFingerAuth\w*)\b")
BRIDGE_LIKE = re.compile(r"`(C[A-Z][A-Za-z0-9]*)`")


@pytest.fixture(scope="module")
def targets():
    return {name: target["type"] for name, target in package_targets().items()}


LAYOUT = REPO / "docs" / "explanation" / "components.md"


def layout_section():
    """The `## Layout` section of docs/explanation/components.md, up to the next heading of
    its level or higher."""
    found = re.search(r"^## Layout\n(.*?)(?=^#{1,2} |\Z)", LAYOUT.read_text(), flags=re.M | re.S)
    assert found, "docs/explanation/components.md has no '## Layout' section"
    return found.group(1)


def documents():
    return {"docs/explanation/components.md, Layout": layout_section(),
            "docs/ARCHITECTURE.md": (REPO / "docs/ARCHITECTURE.md").read_text()}


def named(text):
    """Every target-like name the text uses."""
    return set(TARGET_LIKE.findall(text)) | set(BRIDGE_LIKE.findall(text))


@pytest.mark.parametrize("document", sorted(documents()))
def test_every_target_is_named(targets, document):
    """A reader looking for where a part lives finds every library, product and C bridge of
    Package.swift (test targets are optional)."""
    text = documents()[document]
    missing = sorted(name for name, kind in targets.items() if kind != "test" and not re.search(r"\b%s\b" % name, text))
    assert not missing, "%s does not name these targets of Package.swift: %s" % (document, ", ".join(missing))


@pytest.mark.parametrize("document", sorted(documents()))
def test_no_target_is_named_that_does_not_exist(targets, document):
    """An old name (the FingerAuthServer target before it was split into domain, store,
    transport and console) would send the reader to nothing."""
    unknown = sorted(named(documents()[document]) - set(targets))
    assert not unknown, "%s names targets that Package.swift does not declare: %s" % (document, ", ".join(unknown))


def test_no_document_names_a_removed_target(targets):
    """The same for the rest of the documentation: man pages, BENCHMARKS.md, the whole
    README and every page of docs/, the Makefile's parts, the test files' comments."""
    paths = [REPO / "README.md", REPO / "BENCHMARKS.md", REPO / "Makefile", *sorted((REPO / "man").glob("*")),
             *sorted((REPO / "mk").glob("*.mk")), *sorted((REPO / "docs").rglob("*.md")),
             *sorted((REPO / "Tests").rglob("*.py")), *sorted((REPO / "Tests").rglob("*.swift"))]
    hits = []
    for path in paths:
        if path == pathlib.Path(__file__).resolve():
            continue  # this file spells an old name on purpose
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for name in set(TARGET_LIKE.findall(line)) - set(targets):
                hits.append("%s:%d: %s" % (path.relative_to(REPO), number, name))
    assert not hits, "\n".join(hits)


def test_benchmark_pages_name_no_path_of_the_machine_that_ran_them():
    """BENCHMARKS.md (the current run) and its history are read on other machines: a
    temporary folder, a checkout or a home directory of the bench machine means nothing
    there. The current page links the history, and the history exists."""
    current = (REPO / "BENCHMARKS.md").read_text()
    history = REPO / "docs" / "benchmark-history.md"
    assert "docs/benchmark-history.md" in current and history.exists()
    machine_paths = re.compile(r"(?<![\w.])/(tmp|work|home|root|opt|srv)/")
    hits = ["%s:%d: %s" % (path.relative_to(REPO), number, line.strip())
            for path in (REPO / "BENCHMARKS.md", history)
            for number, line in enumerate(path.read_text().splitlines(), 1) if machine_paths.search(line)]
    assert not hits, "\n".join(hits)
