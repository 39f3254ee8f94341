"""The man page renders cleanly and documents every command; the bash completion offers
every command and the options each one takes (read from the built binary's --help)."""

import os
import re
import shutil
import subprocess

import pytest

from support.cli import run

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAN = os.path.join(REPO, "man", "fingerauth.1")
COMPLETION = os.path.join(REPO, "completion", "fingerauth.bash")
COMMANDS = ["enroll", "list", "remove", "key", "register", "revoke", "reset", "test", "status", "pam-line", "trial", "sync", "host",
            "approve"]


@pytest.mark.skipif(shutil.which("man") is None, reason="man(1) is not installed")
def test_man_page_renders_without_warnings_and_names_every_command():
    done = subprocess.run(["man", "--warnings", "-l", MAN], capture_output=True, text=True,
                          env=dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    for command in COMMANDS:
        assert "fingerauth " + command in done.stdout
    for sub in ["key create", "key show", "key rotate"]:
        assert "\n       " + sub + "\n" in done.stdout
    assert "fingerauth key ek" in done.stdout and "\n       key ek " in done.stdout
    assert "EXIT STATUS" in done.stdout


def complete(*words):
    script = 'source "%s"; COMP_WORDS=(%s); COMP_CWORD=%d; _fingerauth; printf "%%s\\n" "${COMPREPLY[@]}"' % (
        COMPLETION, " ".join("'%s'" % w for w in words), len(words) - 1)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_completion_offers_an_option_only_until_it_is_given():
    """fingerauth refuses a repeated option: the completion does not offer one again."""
    assert {"--user", "--json", "--config"} <= complete("fingerauth", "list", "--")
    offered = complete("fingerauth", "list", "--user", "alice", "--json", "--")
    assert "--user" not in offered and "--json" not in offered and "--config" in offered, offered
    assert "--config" not in complete("fingerauth", "key", "show", "--config=/etc/f.conf", "--")


def test_completion_offers_every_command():
    assert set(COMMANDS) <= complete("fingerauth", "")
    assert complete("fingerauth", "key", "") == {"create", "show", "rotate", "ek"}
    assert complete("fingerauth", "enroll", "--finger", "left-t") == {"left-thumb"}
    assert complete("fingerauth", "trial", "") == {"start", "touch", "stop"}
    assert complete("fingerauth", "host", "") == {"register", "status"}
    assert complete("fingerauth", "host", "status", "--") >= {"--json", "--config", "--state-dir"}
    assert complete("fingerauth", "trial", "touch", "--") >= {"--times", "--wrong", "--wait"}


@pytest.mark.parametrize("command", ["enroll", "list", "remove", "register", "revoke", "reset", "test", "status", "sync",
                                     "approve"])
def test_completion_knows_the_options_of_each_command(world, command):
    usage = run(world, command, "--help").stdout.split("\n  ")[0]
    options = set(re.findall(r"--[a-z-]+", usage))
    assert options <= complete("fingerauth", command, "--")
