"""The login side's targets as Package.swift declares them (`swift package dump-package`): the
kernel and the login domain are plain Swift, the module reaches only what its Embedded build
compiles, each target declares what its sources import, and every library has its tests."""

import os
import pathlib
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support.package_graph import imports, package_targets, reach  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
SOURCES = REPO / "Sources"

LOGIN = ["FingerAuthCore", "FingerAuthKeyFormats", "FingerAuthLoginDomain", "FingerAuthSystem",
         "FingerAuthLoginSystem", "PAMFingerAuth", "FingerAuthPAM"]
# What the module's Embedded build compiles: the kernel, the login domain (of which it uses
# the protocol with fingerauth-pam), the system adapters and the C bridges for libpam, libc
# and the spawn. The login's own adapters (FingerAuthLoginSystem) are fingerauth-pam's.
MODULE_REACH = {"FingerAuthCore", "FingerAuthLoginDomain", "FingerAuthSystem", "CPAM", "CSystem", "CSpawn"}


@pytest.fixture(scope="module")
def targets():
    return package_targets()


def test_the_kernel_reaches_nothing(targets):
    assert reach(targets, "FingerAuthCore") == set()


def test_the_login_domain_is_plain_swift_over_the_kernel(targets):
    """Every login decision: no C bridge, no system adapter, nothing of the network."""
    assert reach(targets, "FingerAuthLoginDomain") == {"FingerAuthCore"}


def test_the_module_reaches_only_what_its_embedded_build_compiles(targets):
    assert reach(targets, "PAMFingerAuth") == MODULE_REACH


def test_fingerauth_pam_reaches_neither_libpam_nor_the_reader_nor_the_network(targets):
    """The module's decisions run in fingerauth-pam: over the login's system adapters, with
    no libpam of its own (the module answers for the PAM handle), no reader, no key, no HTTP."""
    reached = reach(targets, "FingerAuthPAM")
    assert "FingerAuthLoginSystem" in reached
    for target in ("CPAM", "FingerAuthReader", "FingerAuthHTTP", "FingerAuthCrypto", "FingerAuthTPM", "CFPrint",
                   "CLibSSL", "COpenSSL"):
        assert target not in reached, target


def test_the_system_adapters_know_no_login_decision(targets):
    """FingerAuthSystem serves fingerauthd too: it must not drag the login domain in."""
    assert "FingerAuthLoginDomain" not in reach(targets, "FingerAuthSystem")
    assert "FingerAuthLoginDomain" not in reach(targets, "FingerAuthDaemon")


@pytest.mark.parametrize("target", LOGIN)
def test_each_login_target_declares_what_it_imports_and_nothing_more(targets, target):
    assert imports(target) == set(targets[target]["deps"]), target


def test_every_library_target_has_a_test_target(targets):
    """Each library target has a test target of its own name with `Tests` after it."""
    libraries = {name for name, target in targets.items()
                 if target["type"] == "regular" and not name.startswith("C") and name != "FingerAuthTestSupport"}
    tests = {name for name, target in targets.items() if target["type"] == "test"}
    missing = sorted(name for name in libraries if name + "Tests" not in tests)
    assert not missing, missing
