"""The admin console's policy page, hosts page and time filter (issue 18), over real TLS on
fingerauthd's `admin-listen` listener: a rule added in the console refuses the real
module's next login and names its id; moved, tested, removed, each change audited with the
admin's name; a host revoked in the console, its keys with it, as the module's next login
sees it; last logins; the audit log between two times. And what a reviewer tries: a rule
with a bad user name, a rule id that does not exist, a forged form without the CSRF
token, a host name of HTML."""

import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.cli import server_keys  # noqa: E402
from support.console import ConsoleClient  # noqa: E402
from support.world import PASSWORDS  # noqa: E402
from test_authenticator import DeviceKey, claims  # noqa: E402
from test_console import admin, approve_all, world  # noqa: E402,F401  (fixtures)

NOT_HERE = "Fingerprint login not allowed here by the authenticator's policy"


def policy_changes(world):
    return [(r["outcome"], r["rule"], r["admin"], r["peer"], r["reason"]) for r in world.authd.audit_rows()
            if r["event"] == "policy_change"]


def test_a_rule_added_in_the_console_refuses_the_modules_next_login_then_is_moved_tested_and_removed(world, admin):
    world.enroll("alice", "finger-A")
    approve_all(world)
    page = admin.get("/policy")
    assert page.status == 200 and page.table_rows("rules") == []
    added = admin.post("/policy/add", {"csrf": page.field("csrf"), "stage": "login", "action": "deny", "key": "*",
                                       "users": "alice", "hosts": "*", "services": "fa-test", "position": ""})
    assert added.status == 200, added
    [row] = added.table_rows("rules")
    rule = int(row[1])
    assert row[:8] == ["1", str(rule), "login", "alice", "*", "fa-test", "*", "deny"]
    assert added.element_text("message") == "Added rule %d at position 1." % rule
    # The module's next login: refused by that rule, the password behind it.
    login = world.login("alice", scans=["finger-A"], password=PASSWORDS["alice"])
    assert login.name == "PAM_SUCCESS" and NOT_HERE in login.errors and login.prompts == ["Password: "], login
    assert "authenticator refused (403: policy_denied, rule %d)" % rule in world.log_lines()[-1]

    # The test form asks the rules as they are now.
    tested = admin.get("/policy?test_user=alice&test_host=testhost&test_service=fa-test&test_stage=login&test_key=software")
    assert tested.element_text("decision").startswith("deny by rule %d: login users=alice" % rule), tested
    other = admin.get("/policy?test_user=alice&test_host=testhost&test_service=sshd&test_stage=login")
    assert other.element_text("decision") == "allow (no rule matched: the default)"
    no_service = admin.get("/policy?test_user=alice&test_host=testhost&test_stage=login")
    assert "needs a service" in no_service.element_text("decision")
    # Another spelling of alice is not a case the rules decide: the server refuses the name first.
    spelled = admin.get("/policy?test_user=Alice&test_host=testhost&test_service=fa-test&test_stage=login")
    assert spelled.element_text("decision").startswith("Not a user name (upper-case letters)"), spelled

    # A second rule before it, then the first moved up again.
    second = admin.post("/policy/add", {"csrf": added.field("csrf"), "stage": "login", "action": "allow", "key": "*",
                                        "users": "alice", "hosts": "*", "services": "", "position": "1"})
    assert [r[1] for r in second.table_rows("rules")] == [str(rule + 1), str(rule)]
    assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
    moved = admin.post("/policy/move", {"csrf": second.field("csrf"), "id": str(rule), "position": "1"})
    assert moved.status == 200 and [r[1] for r in moved.table_rows("rules")] == [str(rule), str(rule + 1)]
    assert world.login("alice", scans=["finger-A"], password=PASSWORDS["alice"]).prompts == ["Password: "]

    removed = admin.post("/policy/remove", {"csrf": moved.field("csrf"), "id": str(rule)})
    assert removed.status == 200 and removed.element_text("message") == "Removed rule %d." % rule
    assert [r[1] for r in removed.table_rows("rules")] == [str(rule + 1)]
    assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
    # The command line sees what the console did.
    assert world.authd.admin("policy", "list").stdout.splitlines()[1].split()[:2] == ["1", str(rule + 1)]

    changes = policy_changes(world)
    assert [(c[0], c[1], c[2], c[3]) for c in changes] == [
        ("accept", rule, "ada", "127.0.0.1"), ("accept", rule + 1, "ada", "127.0.0.1"),
        ("accept", rule, "ada", "127.0.0.1"), ("accept", rule, "ada", "127.0.0.1")]
    assert all(c[4].startswith("by ada (console): ") and " -> " in c[4] for c in changes), changes


def test_a_policy_form_that_is_wrong_or_forged_changes_nothing(world, admin):
    csrf = admin.csrf("/policy")
    bad_user = admin.post("/policy/add", {"csrf": csrf, "stage": "login", "action": "deny", "users": "bad user",
                                          "hosts": "*"})
    assert bad_user.status == 400 and "users: 'bad user' has a space" in bad_user.element_text("policy-error"), bad_user
    services = admin.post("/policy/add", {"csrf": csrf, "stage": "registration", "action": "deny", "users": "*",
                                          "hosts": "*", "services": "sudo"})
    assert services.status == 400 and "a registration rule has no services" in services.element_text("policy-error")
    action = admin.post("/policy/add", {"csrf": csrf, "stage": "login", "action": "maybe", "users": "*", "hosts": "*"})
    assert action.status == 400 and action.element_text("policy-error") == \
        "action is allow, deny, require-hardware-key or require-provisioned-ek"
    html = admin.post("/policy/add", {"csrf": csrf, "stage": "login", "action": "deny", "users": "<b>x</b>", "hosts": "*"})
    assert html.status == 400 and "<b>x</b>" not in html.text and "&lt;b&gt;x&lt;/b&gt;" in html.text
    unknown = admin.post("/policy/remove", {"csrf": csrf, "id": "999"})
    assert unknown.status == 404 and unknown.element_text("policy-error") == "No such rule."
    forged = admin.post("/policy/add", {"stage": "login", "action": "deny", "users": "*", "hosts": "*"})
    assert forged.status == 403
    stranger = ConsoleClient(world.authd)
    assert stranger.get("/policy").status == 303
    assert stranger.post("/policy/add", {"stage": "login", "action": "deny", "users": "*", "hosts": "*"}).status == 303
    assert world.authd.admin("policy", "list", "--json").stdout.strip() == "[]"
    # The refused removal is audited; nothing else changed.
    assert [(c[0], c[2]) for c in policy_changes(world)] == [("deny", "ada")]


def test_a_host_revoked_in_the_console_takes_its_keys_and_the_module_falls_through(world, admin):
    world.enroll("alice", "finger-A")
    approve_all(world)
    before = admin.get("/hosts")
    [row] = before.table_rows("hosts")
    assert row[:6] == ["testhost", "", "1 of 1", "1", "never", "none reported"], row
    assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
    seen = admin.get("/hosts")
    last = seen.table_rows("hosts")[0][4]
    assert time.strftime("%Y-%m-%d", time.gmtime()) in last, last
    # The login's times as its helper reported them: one login, so p50 = p95 for each stage.
    times = re.fullmatch(r"ready (\d+) / (\d+)finger (\d+) / (\d+)connect (\d+) / (\d+)1 login",
                         seen.table_rows("hosts")[0][5])
    assert times and times[1] == times[2] and times[3] == times[4] and times[5] == times[6], seen.table_rows("hosts")
    [login] = [r for r in world.authd.audit_rows() if r["event"] == "login"]
    assert (int(times[1]), int(times[3]), int(times[5])) == (login["ready_ms"], login["match_ms"], login["connect_ms"])
    keys = admin.get("/keys")
    assert keys.table_rows("keys")[0][6] == last

    revoked = admin.post("/hosts/revoke", {"csrf": seen.field("csrf"), "host": "testhost"})
    assert revoked.status == 200, revoked
    assert revoked.element_text("message") == "Revoked testhost: its enrollment tokens, 1 key and 0 access tokens."
    assert revoked.table_rows("hosts")[0][2:4] == ["0 of 1", "0"]
    assert [k["status"] for k in server_keys(world)] == ["revoked"]
    after = world.login("alice", scans=["finger-A"], password=PASSWORDS["alice"])
    assert after.name == "PAM_SUCCESS" and after.prompts == ["Password: "], after
    rows = [(r["event"], r["host"], r["reason"], r["admin"]) for r in world.authd.audit_rows()
            if r["event"] in ("token_revoke", "admin_revoke")]
    assert rows == [("token_revoke", "testhost", None, "ada"), ("admin_revoke", "testhost", "host_revoked", "ada")]
    again = admin.post("/hosts/revoke", {"csrf": revoked.field("csrf"), "host": "testhost"})
    assert again.status == 404 and again.element_text("message") == "Nothing of testhost was active."
    assert admin.post("/hosts/revoke", {"host": "testhost"}).status == 403


def test_html_in_host_names_labels_rules_and_reasons_is_inert_on_every_page(world, admin):
    """Host names in the registry are plain (token create refuses others), but a token's
    claimed issuer, a label and a rule's patterns are printable ASCII of the admin's or a
    stranger's choosing, and a policy change's reason repeats the rule."""
    world.enroll("alice", "finger-A")
    hostile = "h<svg/onload=alert(1)>"
    assert world.authd.admin("token", "create", "--host", hostile).returncode != 0
    key = DeviceKey()
    world.authd.post_json("/v1/login", {"jwt": key.sign(claims(sub="alice", iss=hostile), kid=world.kid("alice"))})
    for args in (("hosts", "label", "--host", "testhost", "--labels", "<i>l</i>"),
                 ("policy", "add", "--stage", "login", "--users", "*", "--hosts", hostile, "--action", "deny")):
        done = world.authd.admin(*args)
        assert done.returncode == 0, done.stderr
    rows = world.authd.audit_rows()
    # The refused login keeps no claimed host (only the registry's names are stored as hosts)…
    assert [r["host"] for r in rows if r["event"] == "login"] == [None], rows
    # …the policy change's reason repeats the rule's hosts as typed.
    assert any(hostile in (r["reason"] or "") for r in rows if r["event"] == "policy_change"), rows
    pages = {path: admin.get(path) for path in ("/audit", "/hosts", "/policy")}
    for path, page in pages.items():
        assert page.status == 200 and "<svg/onload" not in page.text and "<i>l</i>" not in page.text, path
    assert "h&lt;svg/onload=alert(1)&gt;" in pages["/policy"].text and "h&lt;svg/onload=alert(1)&gt;" in pages["/audit"].text
    assert "&lt;i&gt;l&lt;/i&gt;" in pages["/hosts"].text


def test_the_audit_log_between_two_times(world, admin):
    world.enroll("alice", "finger-A")
    approve_all(world)
    assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
    today = time.strftime("%Y-%m-%d", time.gmtime())
    tomorrow = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 86400))
    inside = admin.get("/audit?event=login&from=%s&to=%s" % (today, tomorrow))
    assert [(r[1], r[3]) for r in inside.table_rows("audit")] == [("login", "alice")], inside
    later = admin.get("/audit?event=login&from=%s+00:00" % tomorrow)
    assert later.table_rows("audit") == []
    before = admin.get("/audit?event=login&to=%sT00:00" % today)
    assert before.table_rows("audit") == []
    wrong = admin.get("/audit?from=2026-02-31")
    assert "'2026-02-31' is not a UTC time" in wrong.element_text("filter-error") and wrong.table_rows("audit") == []
    assert admin.get("/audit.csv?to=yesterday").status == 400
    csv_inside = admin.get("/audit.csv?event=login&from=%s" % today)
    assert csv_inside.text.count("\r\n") == 2  # the header and alice's login


def test_the_hosts_page_shows_live_offline_grants_and_withdraws_them(world, admin):
    """Offline grants (issue 36) on the hosts page: each live grant of the host, and the
    button that withdraws them (audited with the admin); the host drops its grant at its
    next contact."""
    from test_offline_grants import Offline
    offline = Offline(world)  # restarts fingerauthd with a grant key: a new console port
    console = ConsoleClient(world.authd)
    assert console.sign_in("ada").status == 303
    world.enroll("alice", "finger-A")
    approve_all(world)
    assert console.get("/hosts").table_rows("hosts")[0][7] == "none"
    offline.rule(hours=8, uses=3)
    offline.online()
    grant = offline.grant()
    page = console.get("/hosts")
    cell = page.table_rows("hosts")[0][7]
    until = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(grant["exp"]))
    assert cell.startswith("alice until %s, 3 uses" % until), cell
    withdrawn = console.post("/hosts/withdraw-grants", {"csrf": page.field("csrf"), "host": "testhost"})
    assert withdrawn.status == 200, withdrawn
    assert withdrawn.element_text("message") == "Withdrew 1 offline grant of testhost."
    assert withdrawn.table_rows("hosts")[0][7] == "none"
    [row] = [r for r in world.authd.audit_rows() if r["event"] == "grant_withdraw"]
    assert (row["host"], row["admin"], row["reason"]) == ("testhost", "ada", "by ada: 1 grant withdrawn")
    assert console.post("/hosts/withdraw-grants", {"host": "testhost"}).status == 403
    # The host learns it at its next contact.
    done = world.cli("sync")
    assert done.returncode == 0 and "alice: offline grant withdrawn, dropped" in done.stdout, done.stdout + done.stderr
    assert not offline.grant_file.exists()
