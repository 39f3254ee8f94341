"""The module inside a long-lived host: thousands of transactions in one process (libpam
dlopens and dlcloses it each time) must not grow its memory, valgrind must find no
definite leak from it, and what it exports must be only the PAM entry points."""

import ctypes
import os
import re
import subprocess

import pytest

from support.authd import build_dir
from support.world import ACCEPTING_HELPER


def run_cycles(world, count, every, extra=()):
    world.enroll("alice", "finger-A")
    world.fake_helper(ACCEPTING_HELPER)
    world.write_conf(debug_file=None)
    service = world.service("fa-only", fallback=False)
    cmd = [str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--service", service,
           "--user", "alice", "--repeat", str(count), "--rss-every", str(every), *extra]
    done = subprocess.run(cmd, env=world.env, capture_output=True, text=True, timeout=1500)
    results = re.findall(r"^RESULT \d+ (\S+)", done.stdout, re.M)
    rss = {int(c): int(kb) for c, kb in re.findall(r"^RSS (\d+) (\d+)", done.stdout, re.M)}
    return results, rss, done


def test_ten_thousand_logins_in_one_process_do_not_grow_memory(world, capsys):
    results, rss, done = run_cycles(world, 10000, 1000)
    assert len(results) == 10000 and set(results) == {"PAM_SUCCESS"}, done.stdout[-2000:] + done.stderr[-2000:]
    growth = rss[10000] - rss[2000]
    with capsys.disabled():
        print("\n    RSS kB after 1000/2000/5000/10000 logins: %d/%d/%d/%d (growth after warm-up: %d kB)"
              % (rss[1000], rss[2000], rss[5000], rss[10000], growth))
    assert growth < 1024, rss


def test_valgrind_finds_no_definite_leak_from_the_module(world, tmp_path):
    world.enroll("alice", "finger-A")
    world.fake_helper(ACCEPTING_HELPER)
    service = world.service("fa-only", fallback=False)
    report = tmp_path / "valgrind.txt"
    env = dict(world.env)
    cmd = ["valgrind", "--leak-check=full", "--errors-for-leak-kinds=definite", "--show-leak-kinds=definite",
           "--error-exitcode=42", "--log-file=%s" % report,
           str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--service", service,
           "--user", "alice", "--repeat", "20"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    text = report.read_text()
    assert done.stdout.count("RESULT 0 PAM_SUCCESS") == 20, done.stdout + text[-3000:]
    assert "definitely lost: 0 bytes in 0 blocks" in text or "All heap blocks were freed" in text, text[-4000:]
    assert done.returncode == 0, text[-4000:]


def test_dlopen_finds_the_entry_points_and_nothing_else():
    module = ctypes.CDLL(os.path.join(build_dir(), "pam_fingerauth.so"), mode=os.RTLD_NOW | os.RTLD_LOCAL)
    assert module.pam_sm_authenticate and module.pam_sm_setcred
    assert module.pam_sm_open_session and module.pam_sm_close_session  # records remote sessions
    # dlsym also searches the module's dependencies (libc, libcurl…): ask only for names
    # that could come from the module itself — its Swift runtime and its own code.
    for name in ("swift_retain", "swift_release", "swift_allocObject", "$s21FingerAuthLoginDomain9LoginFlowVN",
                 "$s21FingerAuthLoginDomain7OptionsVN", "pam_sm_chauthtok", "pam_sm_acct_mgmt"):
        with pytest.raises(AttributeError):
            getattr(module, name)
