"""The module's log line says where a login's time went: `ready_ms` (the helper's start to
READY: reader open, authenticator reached), `match_ms` (READY to MATCH: the person's finger
included), `answer_ms` (MATCH to the verdict: the signature and the round trip), beside the
whole `ms`. Steps that did not happen are not shown. The helper sends its own view of the
first two, and how long the connection took to open and answer, with the token: the
authenticator's audit row keeps them."""

import re


def outcome_line(world):
    lines = [line for line in world.log_lines() if " result=" in line]
    assert lines, world.log_lines()
    return lines[-1]


def test_a_login_line_carries_the_time_to_ready_to_the_match_and_to_the_answer(world):
    world.enroll("alice", "finger-A")
    world.reader.feed(["SCAN finger-A"], after=0.6)
    login = world.login("alice")
    world.reader.wait()
    assert login.name == "PAM_SUCCESS", login
    line = outcome_line(world)
    found = re.search(r" ms=(\d+) ready_ms=(\d+) match_ms=(\d+) answer_ms=(\d+)$", line)
    assert found, line
    total, ready, match, answer = (int(v) for v in found.groups())
    assert match >= 550, line  # the finger came 0.6 s after the reader opened
    assert ready + match + answer <= total, line
    # The authenticator's row: the helper's own clock, so close to the module's but not equal.
    [row] = [r for r in world.authd.audit_rows() if r["event"] == "login"]
    assert row["outcome"] == "accept", row
    assert 550 <= row["match_ms"] and abs(row["match_ms"] - match) <= 100, (row, line)
    assert 0 < row["ready_ms"] <= ready, (row, line)
    assert 0 <= row["connect_ms"] <= row["ready_ms"] + 1, row


def test_a_login_that_never_got_ready_shows_no_stage_times(world):
    world.enroll("alice", "finger-A")
    world.authd.stop()
    login = world.login("alice", password="alice-password")
    assert login.name == "PAM_SUCCESS"  # the password
    line = outcome_line(world)
    assert "result=PAM_AUTHINFO_UNAVAIL" in line, line
    assert "ready_ms=" not in line and "match_ms=" not in line and "answer_ms=" not in line, line
    assert not [r for r in world.authd.audit_rows() if r["event"] == "login"]
