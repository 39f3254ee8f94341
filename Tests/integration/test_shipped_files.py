"""What ships beside the code says what the code does: a bare `make` builds (and makes no
benchmark venv), `make demo` installs only the demo's packages, and the shipped
/etc/security/fingerauth.conf names every key of the module once and every text name."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from support.authd import build_dir  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PRODUCTS = {"pam_fingerauth.so", "fingerauth-login", "fingerauth", "fingerauthd", "fingerauth-agent", "fingerauth-watcher", "fa-pamtest"}


def make(*args, timeout=1800):
    return subprocess.run(["make", "--no-print-directory", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_a_bare_make_builds_every_product_and_nothing_else(tmp_path):
    goal = make("-pq")
    assert re.search(r"^\.DEFAULT_GOAL := all$", goal.stdout, re.M), "the default goal is not `all`"
    # Into an empty folder the default goal would build the module as well (it runs the
    # recipe; `make build`, the stage before, has just built it the same way) ...
    empty = tmp_path / "empty"
    dry = make("-n", "BUILD=%s" % empty)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    assert "scripts/build-module.sh %s" % empty in dry.stdout, dry.stdout[-2000:]
    # ... so the real run gets the module up to date (a copy with its time), not a second
    # compilation of 2 minutes; every other product is made anew.
    build = tmp_path / "build"
    build.mkdir()
    for name in ("pam_fingerauth.so", "fingerauth-pam"):
        shutil.copy2(Path(build_dir()) / name, build / name)
    done = make("BUILD=%s" % build)  # the default goal; the build lands in tmp_path/build
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert PRODUCTS <= {p.name for p in build.iterdir()}
    assert "swift build -c release" in done.stdout
    assert "venv" not in done.stdout + done.stderr and "pip" not in done.stdout.split()


def test_make_demo_installs_only_the_packages_the_demo_needs():
    dry = make("-n", "demo")
    assert dry.returncode == 0, dry.stderr
    installs = [line.split()[1:] for line in dry.stdout.splitlines() if line.startswith("scripts/install-deps.sh")]
    packages = {p for line in installs for p in line}
    for heavy in ("chromium", "chromium-driver", "swtpm", "postgresql", "valgrind", "python3-selenium", "tpm2-tools"):
        assert heavy not in packages, heavy
    assert {"libpam-wrapper", "libnss-wrapper", "openssl"} <= packages
    assert "scripts/demo.py" in dry.stdout


def module_keys():
    """The keys the module's configuration takes: the entries of OptionTable, one a line,
    each naming its key first (`E.path("state_dir", …)`)."""
    source = (REPO / "Sources" / "FingerAuthLoginDomain" / "Options" / "OptionTable.swift").read_text()
    return set(re.findall(r'^ {8}E\.\w+\(\s*"([a-z_]+)"', source, re.M))


def text_names():
    source = (REPO / "Sources" / "FingerAuthLoginDomain" / "Decisions" / "PromptTexts.swift").read_text()
    cases = re.findall(r"^\s+case (\w+)(?: = \"(\w+)\")?$", source, re.M)
    return {raw or name for name, raw in cases}


def test_the_shipped_configuration_names_each_key_once_and_every_text():
    text = (REPO / "packaging" / "fingerauth.conf").read_text()
    keys = re.findall(r"^#([a-z_]+) = ", text, re.M)
    assert sorted(k for k in keys if keys.count(k) > 1) == []
    assert len(module_keys()) >= 24 and module_keys() == set(keys), module_keys() ^ set(keys)
    names = text_names()
    assert len(names) >= 9 and {"policy_denied", "too_many_attempts"} <= names
    listed = re.search(r"Names: (.*?)\.\n", text, re.S).group(1)
    assert set(re.findall(r"[a-z_]+", listed)) == names
