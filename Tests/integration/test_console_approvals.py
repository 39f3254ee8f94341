"""Remote approvals in the admin console (issue 47, part 5): the approvals page, reached
from a user's keys and a host's row, lists what each approval became, who asked, from where
and which workstation decided; a "Not me" is highlighted there and in the audit log. Made
through the real API (a host key asks, a device key decides) on a real fingerauthd."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.approvals import Parties  # noqa: E402
from test_console import admin, approve_all, world  # noqa: E402,F401  (fixtures)


def approvals(world):
    """web01 asks three times for alice (approved, denied, pending) and once for bob."""
    allowed = world.authd.admin("policy", "add", "--stage", "approve", "--users", "*", "--hosts", "*",
                                "--action", "allow")
    assert allowed.returncode == 0, allowed.stderr
    p = Parties(world.authd)
    web01, db01 = p.host_key("web01"), p.host_key("db01")
    alice, bob = p.device_key("alice", "ws-alice"), p.device_key("bob", "ws-bob")
    approve_all(world)  # this console's fingerauthd holds new keys for an admin
    p.request(web01, "alice", service="sudo", rhost="10.0.0.5", tty="pts/3")
    assert p.decide(alice, p.shown(alice)).status == 200
    p.request(web01, "bob", service="su", rhost="10.0.0.7", tty="pts/4", caller="mallory<b>")
    assert p.decide(bob, p.shown(bob), decision="deny").status == 200
    p.request(db01, "alice", service="sshd", rhost="10.0.0.6", tty="ssh")
    return p, alice


def test_the_approvals_of_a_user_and_a_host_with_not_me_highlighted(world, admin):
    p, alice = approvals(world)
    every = admin.get("/approvals")
    assert every.status == 200
    # Newest first; asked within one second, so compared in a fixed order here.
    rows = sorted(every.table_rows("approvals"), key=lambda r: r[4])
    assert [(r[1], r[2], r[3], r[4], r[5]) for r in rows] == [
        ("pending", "alice", "db01", "sshd", "10.0.0.6 on ssh"),
        ("denied", "bob asked by mallory<b>", "web01", "su", "10.0.0.7 on pts/4"),
        ("approved", "alice", "web01", "sudo", "10.0.0.5 on pts/3"),
    ]
    approved = rows[2]
    assert (approved[8], approved[9]) == ("ws-alice", alice.kid)
    # The denial is the row to look at; HTML in what a host sent stays text.
    assert '<tr class="attention"><td>' in every.text and every.text.count('class="attention"') == 1
    assert "<mark title=\"Not me" in every.text and "mallory&lt;b&gt;" in every.text
    assert "<b>" not in every.text.split("<table", 1)[1]

    mine = admin.get("/approvals?user=alice")
    assert mine.element_text("scope").startswith("Remote approvals of user alice")
    assert sorted(r[3] for r in mine.table_rows("approvals")) == ["db01", "web01"]
    web01 = admin.get("/approvals?host=web01")
    assert sorted(r[2].split()[0] for r in web01.table_rows("approvals")) == ["alice", "bob"]
    assert admin.get("/approvals?user=carol").table_rows("approvals") == []

    # Reached from the keys page (the user) and from the audit log's highlighted Not me.
    keys = admin.get("/keys")
    assert 'href="/approvals?user=alice"' in keys.text
    audit = admin.get("/audit?event=approval_denied")
    [denied] = audit.table_rows("audit")
    assert denied[1] == "approval_denied" and 'class="attention"' in audit.text


def test_the_approvals_page_needs_a_session(world):
    from support.console import ConsoleClient
    stranger = ConsoleClient(world.authd)
    page = stranger.get("/approvals?user=alice")
    assert page.status in (302, 303) and stranger.header(page, "Location") == ["/signin"], page
