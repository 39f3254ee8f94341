"""The pipes between pam_fingerauth.so and fingerauth-pam, tried as an attacker and as bad
luck would: a fingerauth-pam that is missing, writable by others, talks nonsense, names a
code the module may not return, floods, or ends without a result; PAM items that hold a
newline; the password at the parallel prompt. Each ends in a denial with one log line in the
host, and the host itself never dies (no SIGPIPE, no crash)."""

import os
import re
import subprocess

import pytest

from support.module_syslog import LOG_AUTHPRIV, SEVERITY, login_with_syslog, namespaces_work, parse

pytestmark = pytest.mark.skipif(not namespaces_work(), reason="mount namespaces are not allowed here")

# Reads the module's request (up to END) and keeps it in request.txt in the test's folder
# (the script runs as /dev/fd/3: its own path is not known to it).
READ_REQUEST = 'dir=%s\nwhile read -r line; do echo "$line" >> "$dir/request.txt"; [ "$line" = END ] && break; done\n'


def stand_in(world, body, name="fake-pam"):
    """A stand-in fingerauth-pam (a shell script, root 0755) as `pam_helper`."""
    path = world.tmp / name
    path.write_text("#!/bin/sh\n" + READ_REQUEST % world.tmp + body + "\n")
    os.chmod(path, 0o755)
    world.write_conf(pam_helper=str(path))
    return path


def module_lines(report):
    return [parse(m) for m in report["syslog"] if "pam_fingerauth" in m]


def result(report):
    return [line for line in report["stdout"].splitlines() if line.startswith("RESULT")][-1]


def one_error_line(report, reason):
    [(priority, text)] = module_lines(report)
    assert priority == LOG_AUTHPRIV | SEVERITY["err"], (priority, text)
    assert "fingerprint login unavailable: " in text and reason in text, text


@pytest.fixture
def only_module(world):
    world.write_conf(debug_file=None)
    return world.service("fa-only", fallback=False)


def test_a_missing_fingerauth_pam_is_a_denial_with_the_reason(world, only_module):
    world.write_conf(pam_helper=str(world.tmp / "no-such-program"))
    report = login_with_syslog(world, only_module)
    assert result(report) == "RESULT 9 PAM_AUTHINFO_UNAVAIL"
    one_error_line(report, "cannot start fingerauth-pam: %s: " % (world.tmp / "no-such-program"))


def test_a_fingerauth_pam_writable_by_others_is_never_started(world, only_module):
    program = stand_in(world, "echo 'RESULT 0'")
    os.chmod(program, 0o777)
    report = login_with_syslog(world, only_module)
    assert result(report) == "RESULT 9 PAM_AUTHINFO_UNAVAIL"
    one_error_line(report, "writable by group or others")
    assert not (world.tmp / "request.txt").exists()


@pytest.mark.parametrize("line, reason", [
    ("RESULT 0 PAM_SUCCESS", "an unreadable line"),      # a word too many
    ("RESULT 42", "an unreadable line"),                 # not a code the module returns
    ("LOG 5 half%", "an unreadable line"),                # a broken escape
    ("HELLO", "an unreadable line"),
])
def test_a_line_that_is_not_exactly_the_protocol_is_a_denial(world, only_module, line, reason):
    stand_in(world, "echo '%s'\necho 'RESULT 0'" % line)
    report = login_with_syslog(world, only_module)
    assert result(report) == "RESULT 9 PAM_AUTHINFO_UNAVAIL"
    one_error_line(report, "fingerauth-pam: " + reason)


def test_an_end_without_a_result_is_a_denial_and_the_host_survives_its_answer(world, only_module):
    """The stand-in asks for a text and is gone before the answer: the module's write goes
    into a pipe it still holds a read end of (no SIGPIPE in the host), then it reads the end."""
    stand_in(world, "echo 'INFO first text'")
    report = login_with_syslog(world, only_module)
    assert "INFO first text" in report["stdout"].splitlines()
    assert result(report) == "RESULT 9 PAM_AUTHINFO_UNAVAIL"
    one_error_line(report, "fingerauth-pam: it ended without a result")


def test_a_flood_is_cut_and_denied(world, only_module):
    stand_in(world, "head -c 3000000 /dev/zero | tr '\\0' 'x'\necho\necho 'RESULT 0'")
    report = login_with_syslog(world, only_module)
    assert result(report) == "RESULT 9 PAM_AUTHINFO_UNAVAIL"
    one_error_line(report, "fingerauth-pam: a line too long, or too much output")


def test_the_request_carries_the_arguments_and_the_hosts_uids(world, only_module):
    stand_in(world, "echo 'RESULT 25'")
    report = login_with_syslog(world, world.service("fa-args", module_args="debug text.place_finger=Touch%it",
                                                    fallback=False))
    assert result(report) == "RESULT 25 PAM_IGNORE"
    request = (world.tmp / "request.txt").read_text().splitlines()
    assert request[0] == "FINGERAUTH-MODULE 1 AUTH" and request[-1] == "END"
    caller = request[2].split()
    assert caller[:3] == ["CALLER", "0", "0"] and int(caller[3]) > 1  # the host's uids and pid
    arguments = [line for line in request if line.startswith("ARG ")]
    assert request[4:4 + len(arguments)] == arguments  # in order, before the known answers
    assert arguments == ["ARG conf=%s" % world.conf_path, "ARG debug", "ARG text.place_finger=Touch%25it"]


def test_the_request_answers_what_every_login_asks_and_nothing_else(world, only_module):
    """The items, the user libpam already has, its uid and name, the SSH variables and the
    language come with the request (a round trip each saved); messages, prompts and log
    lines are never answered in advance."""
    stand_in(world, "echo 'RESULT 25'")
    report = login_with_syslog(world, only_module, extra=("--rhost", "evil\nRESULT 0"))
    assert result(report) == "RESULT 25 PAM_IGNORE"
    request = (world.tmp / "request.txt").read_text().splitlines()
    known = request[request.index("KNOWN ITEM SERVICE"):-1]
    pairs = dict(zip(known[0::2], known[1::2]))
    assert all(call.startswith("KNOWN ") for call in pairs) and all(a.startswith("ANSWER ") for a in pairs.values())
    uid = pairs["KNOWN UID alice"].split()[-1]
    assert uid.isdigit(), pairs
    assert pairs == {
        "KNOWN ITEM SERVICE": "ANSWER VALUE fa-only", "KNOWN ITEM TTY": "ANSWER NONE",
        "KNOWN ITEM RHOST": "ANSWER VALUE evil%0ARESULT 0",  # one escaped value, not a line of its own
        "KNOWN SSH": "ANSWER NONE", "KNOWN LOCALE": "ANSWER NONE", "KNOWN USER": "ANSWER VALUE alice",
        "KNOWN UID alice": "ANSWER VALUE " + uid, "KNOWN NAME " + uid: "ANSWER VALUE alice",
    }


def test_a_pam_item_with_a_newline_cannot_forge_a_line(world, only_module):
    """PAM_RHOST is the application's (sshd's from a reverse lookup): a newline and a RESULT
    in it stay one escaped value; the real fingerauth-pam skips the remote login."""
    world.enroll("alice", "finger-A")
    report = login_with_syslog(world, only_module, extra=("--rhost", "evil\nRESULT 0"))
    assert result(report) == "RESULT 25 PAM_IGNORE"
    [(_, text)] = module_lines(report)
    assert 'reason="remote session skipped (PAM_RHOST evil?RESULT?0)"' in text, text


def test_the_password_at_the_parallel_prompt_never_leaves_the_host(world, only_module):
    """fingerauth-pam learns only that something was typed; `AUTHTOK` hands it on in the host."""
    stand_in(world, 'echo "SECRET Password or place your finger: "\nread -r answer\necho "$answer" >> "$dir/answers.txt"\n'
                    'echo AUTHTOK\nread -r answer\necho "$answer" >> "$dir/answers.txt"\necho "RESULT 9"')
    report = login_with_syslog(world, only_module, extra=("--password", "s3cret-PASSWORD"))
    assert result(report) == "RESULT 9 PAM_AUTHINFO_UNAVAIL"
    assert (world.tmp / "answers.txt").read_text() == "GIVEN\nOK\n"
    for name in ("request.txt", "answers.txt"):
        assert "s3cret-PASSWORD" not in (world.tmp / name).read_text()


def test_the_seat_facts_are_the_hosts_not_fingerauth_pams(world):
    """fingerauth-pam runs in a session of its own, without a terminal: the controlling
    terminal the local-seat rule reads is the host's (`/proc/<host pid>/stat`)."""
    world.enroll("alice", "finger-A")
    service = world.service("fa-only", fallback=False)
    harness = " ".join([str(world.build / "fa-pamtest"), "--confdir", str(world.confdir), "--service", service,
                        "--user", "alice"])
    done = subprocess.run(["script", "-q", "-e", "-c", harness, "/dev/null"], env=world.env, capture_output=True,
                          text=True, timeout=60)
    assert "RESULT" in done.stdout, done.stdout + done.stderr
    seat = [line for line in world.log_lines() if "local seat: records mode" in line]
    assert seat and re.search(r"controlling terminal pts/\d+$", seat[-1]), world.log_lines()
