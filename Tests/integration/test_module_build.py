"""The module as libpam will load it: Embedded Swift with no Swift runtime, NEEDED libpam and
libc only, no RPATH, never unloaded, bound at load, and nothing exported but the PAM entry
points."""

import os
import re
import subprocess

from support.authd import build_dir

MODULE = "%s/pam_fingerauth.so" % build_dir()


def _dynamic_section():
    return subprocess.run(["readelf", "-d", MODULE], capture_output=True, text=True, check=True).stdout


def test_module_needs_no_swift_runtime_and_has_no_rpath():
    section = _dynamic_section()
    needed = [line for line in section.splitlines() if "(NEEDED)" in line]
    assert needed and not any("swift" in line.lower() for line in needed), needed
    assert "RPATH" not in section and "RUNPATH" not in section


def test_module_loads_libpam_and_libc_only():
    """Inside a setuid host the environment is the caller's: no library that reads it
    (libcurl, OpenSSL, libfprint, GLib, a Swift runtime) may be loaded into the host. The
    module is Embedded Swift: nothing of Swift or C++ beside libpam and libc."""
    needed = sorted(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", _dynamic_section()))
    assert needed == ["libc.so.6", "libpam.so.0"], needed


def test_module_carries_no_swift_runtime():
    """The runtime's entry points and its environment variables are not in the module at all
    (the static runtime it once carried read some twenty SWIFT_* variables in setuid hosts)."""
    out = subprocess.run(["nm", "-D", MODULE], capture_output=True, text=True, check=True).stdout
    assert not [line for line in out.splitlines() if "swift_" in line], out
    with open(MODULE, "rb") as module:
        assert b"SWIFT_DEBUG" not in module.read()


def test_module_is_small():
    """8 MB with the static Swift runtime; Embedded Swift and handing every decision to
    fingerauth-pam brought it to the design's target: at most 256 KiB stripped."""
    assert os.path.getsize(MODULE) <= 256 * 1024, os.path.getsize(MODULE)


def _undefined_symbols():
    """The module's undefined dynamic symbols, without their version (`socket@GLIBC_2.2.5`
    is `socket`): compared with the bare names, as before, nothing could ever match."""
    out = subprocess.run(["nm", "-D", "--undefined-only", MODULE], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.split()}


def test_module_has_no_thread_or_network_symbols():
    """No thread is started inside the host and nothing of the network is used, not even a
    Unix socket: the module starts fingerauth-pam and talks to it over two pipes; asking
    fingerauth-agent (for a host that runs as the user) is fingerauth-pam's. It never
    connects, listens, resolves a name or links libcurl or libfprint."""
    undefined = _undefined_symbols()
    assert {"pipe2", "clone", "pam_get_user", "pam_prompt"} <= undefined, "the symbol list is not what this test expects"
    for symbol in ("pthread_create", "socket", "connect", "bind", "listen", "accept", "accept4", "getaddrinfo",
                   "gethostbyname", "curl_easy_init", "fp_context_new", "g_main_context_new"):
        assert symbol not in undefined, symbol


def test_module_is_never_unloaded_and_bound_now():
    section = _dynamic_section()
    assert "NODELETE" in section and "BIND_NOW" in section


def test_module_exports_only_the_pam_entry_points():
    """auth (authenticate, setcred) and session (open records a remote session, close does nothing)."""
    symbols = subprocess.run(["nm", "-D", "--defined-only", MODULE], capture_output=True, text=True, check=True).stdout
    assert sorted(line.split()[-1] for line in symbols.splitlines()) == [
        "pam_sm_authenticate", "pam_sm_close_session", "pam_sm_open_session", "pam_sm_setcred"]


def test_executables_carry_their_swift_runtime():
    for name in ("fingerauth", "fingerauth-login", "fingerauthd", "fingerauth-agent", "fingerauth-watcher"):
        section = subprocess.run(["readelf", "-d", "%s/%s" % (build_dir(), name)], capture_output=True, text=True, check=True).stdout
        assert "swift" not in section.lower() and "RUNPATH" not in section, name


def test_fingerauth_pam_is_embedded_swift_over_libc_alone():
    """The module's decisions start for every login: like the module, no Swift runtime to
    start (it cost some 2 ms a login as a static Swift program), NEEDED libc only."""
    path = "%s/fingerauth-pam" % build_dir()
    section = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    assert re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", section) == ["libc.so.6"], section
    symbols = subprocess.run(["nm", "-D", "--undefined-only", path], capture_output=True, text=True, check=True).stdout
    assert "swift_" not in symbols and "pthread_create" not in symbols
