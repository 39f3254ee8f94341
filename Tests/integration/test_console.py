"""The admin console (issue 18, first part) on fingerauthd's `admin-listen` listener, over
real TLS: accounts made with `fingerauthd admin create` and their one-time setup link;
sign-in, sessions and CSRF; the pages an admin reads (overview counts of this test's own
logins, the audit log filtered, keys, hosts) and the actions they take (approve, revoke),
seen through the real module's next login. And what a stranger tries first: no session,
no CSRF token, another listener's cookie, a signed-out cookie, guessing passwords, HTML in
names the API let through, the console's paths on the login port and back."""

import base64
import concurrent.futures
import csv
import hashlib
import http.client
import io
import json
import os
import sys
import urllib.parse

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.authd import Authd  # noqa: E402
from support.cli import server_keys  # noqa: E402
from support.console import PASSWORD, ConsoleClient, create_admin  # noqa: E402
from support.world import AUDIENCE, PASSWORDS, World  # noqa: E402
from test_authenticator import DeviceKey, claims  # noqa: E402
from test_policy import db, server  # noqa: E402,F401  (store fixtures: sqlite and postgresql)

CONSOLE = ("--admin-listen", "0")
# 55 keys on one host: past the default registrations per host and window.
NO_REGISTRATION_LIMIT = ("--host-registrations", "0")


@pytest.fixture
def world(tmp_path, ca):
    w = World(tmp_path, ca)
    try:
        w.start_authenticator(args=CONSOLE + ("--approval", "manual"))
        yield w
    finally:
        w.close()


@pytest.fixture
def admin(world):
    create_admin(world.authd, "ada")
    client = ConsoleClient(world.authd)
    signed = client.sign_in("ada")
    assert signed.status == 303 and client.header(signed, "Location") == ["/overview"], signed
    return client


def approve_all(world):
    for key in server_keys(world):
        if key["status"] == "pending":
            world.authd.admin("keys", "approve", "--kid", key["kid"])


def test_setup_link_sign_in_and_the_session_cookie(world):
    link = create_admin(world.authd, "ada", password=None)
    listed = world.authd.admin("admin", "list")
    assert listed.stdout == "ada\tsetup pending\n"
    client = ConsoleClient(world.authd)
    token = urllib.parse.parse_qs(urllib.parse.urlparse(link).query)["token"][0]
    short = client.post("/setup", {"token": token, "password": "short", "again": "short"})
    assert short.status == 400 and "at least 12 characters" in short.element_text("setup-error")
    done = client.post("/setup", {"token": token, "password": PASSWORD, "again": PASSWORD})
    assert done.status == 303
    again = client.post("/setup", {"token": token, "password": PASSWORD + "x", "again": PASSWORD + "x"})
    assert again.status == 410 and "This setup link was used already" in again.element_text("setup-error")
    assert world.authd.admin("admin", "list").stdout == "ada\tready\n"

    signed = client.sign_in("ada")
    assert signed.status == 303
    [cookie] = [v for v in client.header(signed, "Set-Cookie") if v.startswith("fa_console=")]
    assert "; HttpOnly" in cookie and "; SameSite=Strict" in cookie and "; Secure" in cookie and "; Path=/" in cookie
    page = client.get("/overview")
    assert page.status == 200 and "<span class=\"who\">ada</span>" in page.text
    policy = client.header(page, "Content-Security-Policy")
    assert policy == ["default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                      "frame-ancestors 'none'; base-uri 'none'"]
    assert "<script" not in page.text and "http://" not in page.text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    rows = [r for r in world.authd.audit_rows() if r["event"].startswith("admin_")]
    assert [(r["event"], r["outcome"], r["admin"]) for r in rows] == [
        ("admin_create", "accept", "ada"), ("admin_setup", "accept", "ada"), ("admin_signin", "accept", "ada")]
    # The setup secret is never stored, only its digest (kept without an expiry once used,
    # so that the link can say it was used); the password only as scrypt.
    stored = world.authd.sql("SELECT password_hash, setup_sha256, setup_expires FROM admins")
    digest = base64.urlsafe_b64encode(hashlib.sha256(base64.urlsafe_b64decode(token + "=")).digest()).rstrip(b"=").decode()
    assert stored[0]["password_hash"].startswith("scrypt$15$8$1$") and stored[0]["setup_sha256"] == digest
    assert stored[0]["setup_expires"] is None
    assert token not in world.authd.log_text() and PASSWORD not in world.authd.log_text()


def test_every_page_needs_a_session_and_every_form_its_csrf_token(world, admin):
    stranger = ConsoleClient(world.authd)
    for path in ("/", "/overview", "/audit", "/audit.csv", "/keys", "/hosts", "/policy"):
        page = stranger.get(path)
        assert page.status == 303 and stranger.header(page, "Location") == ["/signin"], (path, page)
    kid = DeviceKey().kid
    for path in ("/keys/revoke", "/keys/approve", "/hosts/revoke", "/policy/add", "/policy/move", "/policy/remove",
                 "/signout"):
        assert stranger.post(path, {"kid": kid}).status == 303

    refused = admin.post("/keys/revoke", {"kid": kid})
    assert refused.status == 403 and "no or a wrong CSRF token" in refused.text
    wrong = admin.post("/keys/revoke", {"kid": kid, "csrf": "A" * 32})
    assert wrong.status == 403
    assert "without its CSRF token, refused" in world.authd.log_text()

    # Signed out, the same cookie opens nothing.
    cookie = admin.cookies["fa_console"]
    out = admin.post("/signout", {"csrf": admin.csrf()})
    assert out.status == 303 and "fa_console" not in admin.cookies
    replay = ConsoleClient(world.authd)
    replay.cookies["fa_console"] = cookie
    assert replay.get("/overview").status == 303


def test_a_cookie_of_another_console_listener_is_refused(world, admin, tmp_path):
    other = Authd(str(tmp_path / "other"), audience=AUDIENCE, tls=world.ca, args=CONSOLE, db=world.authd.db)
    with other:
        client = ConsoleClient(other)
        client.cookies["fa_console"] = admin.cookies["fa_console"]
        page = client.get("/overview")
        assert page.status == 303 and client.header(page, "Location") == ["/signin"]
        # The same account signs in there on its own (the accounts are the database's).
        assert client.sign_in("ada").status == 303 and client.get("/overview").status == 200


def test_wrong_passwords_are_counted_and_then_refused_without_checking(world):
    create_admin(world.authd, "ada")
    client = ConsoleClient(world.authd)
    nobody = client.sign_in("nobody", "whatever password")
    assert nobody.status == 401 and nobody.element_text("signin-error") == "Wrong admin name or password."
    for _ in range(4):
        assert client.sign_in("ada", "not the password").status == 401
    limited = client.sign_in("ada")
    assert limited.status == 429 and "Too many failed sign-ins" in limited.element_text("signin-error")
    rows = [(r["outcome"], r["reason"], r["admin"], bool(r["verified"]))
            for r in world.authd.audit_rows() if r["event"] == "admin_signin"]
    # A failed sign-in proved nothing: its row is unverified (kept 7 days, not 365).
    assert rows == [("deny", "bad_credentials", "nobody", False)] + [("deny", "bad_credentials", "ada", False)] * 4
    for _ in range(3):
        assert client.sign_in("ada").status == 429
    assert len([r for r in world.authd.audit_rows() if r["event"] == "admin_signin"]) == 5
    # Past the limit no row is written for each attempt, so guessing cannot fill the disk: they
    # are counted in the address's one `refusals` row of the window, unverified.
    refusals = world.authd.wait_for_rows(lambda rows: sum(r["count"] for r in rows if r["event"] == "refusals") == 4)
    assert [(r["peer"], r["reason"], r["count"], bool(r["verified"])) for r in refusals if r["event"] == "refusals"] == [
        ("127.0.0.1", "signin_limited", 4, False)]
    assert world.authd.log_text().count("console: sign-in as ada from 127.0.0.1 refused: too many failures") == 1
    # A sign-in form posted without its double-submit cookie (another site's form) is refused.
    bare = ConsoleClient(world.authd)
    form = bare.get("/signin")
    bare.cookies.clear()
    assert bare.post("/signin", {"csrf": form.field("csrf"), "name": "ada", "password": PASSWORD}).status == 403


def cpu_seconds(pid):
    """User and system CPU time of process `pid`, all its threads (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_setup_link_that_opens_nothing_costs_no_hash_and_is_limited(world):
    """Issue 32, point 2: a bogus setup token used to cost scrypt (32 MiB, ~100 ms of a
    core) before the token was looked at, with no limit and no row."""
    connection = http.client.HTTPSConnection("127.0.0.1", world.authd.console_port, timeout=30,
                                             context=world.authd.tls.ssl_context(), source_address=("127.0.0.2", 0))
    try:
        connection.request("GET", "/setup")  # the handshake, before the measure
        connection.getresponse().read()
        before = cpu_seconds(world.authd.pid)
        statuses = []
        for _ in range(100):
            form = urllib.parse.urlencode({"token": base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode(),
                                           "password": PASSWORD, "again": PASSWORD})
            connection.request("POST", "/setup", body=form, headers={"Content-Type": "application/x-www-form-urlencoded"})
            answer = connection.getresponse()
            answer.read()
            statuses.append(answer.status)
        spent = cpu_seconds(world.authd.pid) - before
    finally:
        connection.close()
    # Under the sign-in limiter: five refusals, then 429 without looking further.
    print("100 bogus setups: %.0f ms of fingerauthd's CPU" % (spent * 1000))
    assert statuses == [404] * 5 + [429] * 95
    assert spent < 0.100, "100 bogus setups cost %.0f ms of fingerauthd's CPU (not under 1 ms each)" % (spent * 1000)
    # One unverified row for the window, however many came; one log line.
    rows = world.authd.wait_for_rows(lambda rows: sum(r["count"] for r in rows if r["event"] == "refusals") == 100)
    assert [(r["peer"], r["reason"], r["count"], bool(r["verified"])) for r in rows if r["event"] == "refusals"] == [
        ("127.0.0.2", "setup_refused", 100, False)]
    assert not [r for r in rows if r["event"].startswith("admin_")]
    assert world.authd.log_text().count("console: setup from 127.0.0.2 refused") == 1
    # A real link, from elsewhere, still works.
    create_admin(world.authd, "ada")


def test_sign_ins_sent_together_get_no_more_hashes_than_the_limit(world):
    """The attempt is counted before the hash, not after: requests in flight together
    cannot all pass a check that none of them has counted yet."""
    create_admin(world.authd, "ada")
    clients = [ConsoleClient(world.authd) for _ in range(12)]
    forms = [client.get("/signin").field("csrf") for client in clients]
    with concurrent.futures.ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(lambda pair: pair[0].post("/signin", {"csrf": pair[1], "name": "ada", "password": "wrong"}),
                                zip(clients, forms)))
    assert sorted(a.status for a in answers) == [401] * 5 + [429] * 7
    rows = [r for r in world.authd.audit_rows() if r["event"] == "admin_signin"]
    assert [(r["outcome"], bool(r["verified"])) for r in rows] == [("deny", False)] * 5


def test_the_console_and_the_login_api_never_share_a_listener(world, admin):
    for path in ("/healthz", "/metrics", "/v1/login", "/v1/keys", "/oauth2/token"):
        assert admin.get(path).status == 404, path
    assert admin.request("POST", "/v1/login", form={"jwt": "x"}).status in (403, 404)
    for path in ("/signin", "/overview", "/console.css", "/setup"):
        assert world.authd.request("GET", path).status == 404, path


def test_overview_counts_this_tests_logins_and_the_audit_log_filters(world, admin):
    world.enroll("alice", "finger-A")
    approve_all(world)
    assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
    assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
    # A forged token: refused, one more refusal in the figures.
    forged = DeviceKey()
    world.authd.post_json("/v1/login", {"jwt": forged.sign(claims(sub="alice"), kid=world.kid("alice"))})
    page = admin.get("/overview")
    assert page.element_text("accepted") == "Accepted logins (7 days): 2", page
    assert page.element_text("refused") == "Refused logins (7 days): 1", page
    assert page.text.count('<rect class="accepted"') >= 1 and '<rect class="refused"' in page.text
    assert page.table_rows("reasons") == [["bad_signature", "1"]], page.table_rows("reasons")

    logins = admin.get("/audit?event=login&outcome=accept")
    assert logins.status == 200
    assert [(r[1], r[2], r[3], r[4]) for r in logins.table_rows("audit")] == [("login", "accept", "alice", "testhost")] * 2
    refused = admin.get("/audit?event=login&outcome=deny")
    assert [(r[1], r[2], r[7]) for r in refused.table_rows("audit")] == [("login", "deny", "bad_signature")]
    assert admin.get("/audit?user=bob").table_rows("audit") == []
    exported = admin.get("/audit.csv?event=login")
    assert [h for h in admin.header(exported, "Content-Type")] == ["text/csv; charset=utf-8"]
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert sorted(r["outcome"] for r in rows) == ["accept", "accept", "deny"]


def test_the_audit_page_tells_a_fingerauth_test_from_a_real_sudo(world, admin):
    """The service column: `fingerauth test` and a sudo by the same finger were two alike
    rows before; the CSV export carries it too."""
    world.enroll("alice", "finger-A")
    approve_all(world)
    tested = world.cli("test", "--user", "alice", feed=["SCAN finger-A"])
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert world.login("alice", scans=["finger-A"], service="sudo").name == "PAM_SUCCESS"
    page = admin.get("/audit?event=login")
    assert "<th>service</th>" in page.text, page
    rows = page.table_rows("audit")
    # Newest first: the sudo, then the test.
    assert [(r[1], r[2], r[3], r[4], r[5]) for r in rows] == [
        ("login", "accept", "alice", "testhost", "sudo"), ("login", "accept", "alice", "testhost", "fingerauth-test")], rows
    exported = list(csv.DictReader(io.StringIO(admin.get("/audit.csv?event=login").text)))
    assert [(r["service"], r["client_service"]) for r in exported] == [("sudo", ""), ("fingerauth-test", "")]


def test_html_in_what_the_api_let_through_is_rendered_inert(world, admin):
    world.enroll("alice", "finger-A")
    hostile = '<img src=x onerror="alert(1)">&lt;'
    key = DeviceKey()
    world.authd.post_json("/v1/login", {"jwt": key.sign(claims(sub=hostile), kid=world.kid("alice"))})
    world.authd.post_json("/v1/login", {"jwt": key.sign(claims(sub="alice"), kid='"><script>x</script>')})
    # (The hostile name is not a user name: refused before its signature, and kept as claimed.)
    stored = [(r["claimed_user"], r["kid"]) for r in world.authd.audit_rows()
              if r["reason"] in ("invalid_user_name", "bad_signature", "bad_kid")]
    # The audit log keeps < and > (it replaces only spaces, quotes and control bytes).
    assert stored[0][0] == "<img?src=x?onerror=?alert(1)?>&lt;" and stored[1][1] == "?><script>x</script>", stored
    page = admin.get("/audit")
    assert "<img" not in page.text and "<script>x" not in page.text
    assert "<em>claimed: &lt;img?src=x?onerror=?alert(1)?&gt;&amp;lt;</em>" in page.text
    assert "<code>?&gt;&lt;script&gt;x&lt;/script&gt;</code>" in page.text
    world.authd.post_json("/v1/login", {"jwt": key.sign(claims(sub="=HYPERLINK(1)"), kid=world.kid("alice"))})
    rows = list(csv.DictReader(io.StringIO(admin.get("/audit.csv").text)))
    claimed = [r["claimed_user"] for r in rows]
    assert "<img?src=x?onerror=?alert(1)?>&lt;" in claimed
    # A spreadsheet would run a cell that starts with "=": the export makes it text.
    assert "'=HYPERLINK(1)" in claimed and "=HYPERLINK(1)" not in claimed


def test_approve_a_pending_key_then_revoke_it_as_the_module_sees_it(world, admin):
    world.enroll("alice", "finger-A")
    kid = world.kid("alice")
    assert [k["status"] for k in server_keys(world)] == ["pending"]
    keys = admin.get("/keys")
    assert kid in keys.text and '<span class="status">pending</span>' in keys.text
    pending = world.login("alice", scans=["finger-A"], password=PASSWORDS["alice"])
    assert pending.prompts == ["Password: "]

    approved = admin.post("/keys/approve", {"kid": kid, "csrf": keys.field("csrf")})
    assert approved.status == 200 and approved.element_text("message") == "Approved %s." % kid
    login = world.login("alice", scans=["finger-A"])
    assert login.name == "PAM_SUCCESS" and login.prompts == [], login

    revoked = admin.post("/keys/revoke", {"kid": kid, "csrf": approved.field("csrf")})
    assert revoked.status == 200 and revoked.element_text("message") == "Revoked %s." % kid
    after = world.login("alice", scans=["finger-A"], password=PASSWORDS["alice"])
    assert after.name == "PAM_SUCCESS" and after.prompts == ["Password: "], after
    rows = [(r["event"], r["kid"], r["admin"], r["outcome"]) for r in world.authd.audit_rows()
            if r["event"] in ("admin_approve", "admin_revoke")]
    assert rows == [("admin_approve", kid, "ada", "accept"), ("admin_revoke", kid, "ada", "accept")]
    unknown = admin.post("/keys/revoke", {"kid": "nope", "csrf": revoked.field("csrf")})
    assert unknown.status == 404 and unknown.element_text("message") == "No key nope."


def test_hosts_page_lists_the_hosts_with_labels_tokens_and_keys(world, admin):
    world.enroll("alice", "finger-A")
    done = world.authd.admin("hosts", "label", "--host", "testhost", "--labels", "lab-1")
    assert done.returncode == 0, done.stderr
    page = admin.get("/hosts")
    assert page.status == 200
    assert [r[:5] for r in page.table_rows("hosts")] == [["testhost", "lab-1", "1 of 1", "1", "never"]], page.text


def test_the_console_on_both_stores(tmp_path, ca, db):
    from test_policy import register  # noqa: E402  (a key registered through the API)
    with Authd(str(tmp_path / "a"), audience=AUDIENCE, tls=ca, db=db, args=CONSOLE + ("--approval", "manual")) as authd:
        create_admin(authd, "ada")
        client = ConsoleClient(authd)
        assert client.sign_in("ada").status == 303
        token = authd.create_token("h1")
        key, answer = register(authd, token, "alice", "h1")
        assert answer.status in (200, 201, 202), answer
        login = lambda: authd.post_json("/v1/login", {"jwt": key.sign(claims(sub="alice", iss="h1"))}).status  # noqa: E731
        assert login() == 401  # pending: refused
        keys = client.get("/keys")
        assert [r[4] for r in keys.table_rows("keys")] == ["pending"]
        assert client.post("/keys/approve", {"kid": key.kid, "csrf": keys.field("csrf")}).status == 200
        assert login() == 200
        overview = client.get("/overview")
        assert overview.element_text("accepted") == "Accepted logins (7 days): 1"
        assert overview.element_text("refused") == "Refused logins (7 days): 1"
        audit = client.get("/audit?event=admin_approve")
        assert [(r[1], r[2], r[10]) for r in audit.table_rows("audit")] == [("admin_approve", "accept", "ada")]


def test_the_keys_and_hosts_pages_paginate_on_both_stores(tmp_path, ca, db):
    """Issue 32: the keys and hosts pages show 50 rows a page, with links to the next and
    previous pages; every key and host on exactly one page, in the page's order; the last
    login of a key on the second page is found."""
    args = CONSOLE + ("--approval", "manual") + NO_REGISTRATION_LIMIT
    with Authd(str(tmp_path / "a"), audience=AUDIENCE, tls=ca, db=db, args=args) as authd:
        create_admin(authd, "ada")
        client = ConsoleClient(authd)
        assert client.sign_in("ada").status == 303
        token = authd.create_token("h00")
        keys = {}
        for i in range(55):
            key = DeviceKey()
            user = "u%02d" % i
            answer = authd.post_json("/v1/keys", {"user": user, "host": "h00", "jwk": key.jwk,
                                                  "proof": key.proof(claims(sub=user, iss="h00"))}, token=token)
            assert answer.status == 201, answer
            keys[key.kid] = (user, key)
        for i in range(1, 56):
            authd.create_token("h%02d" % i)
        approved = sorted(keys)[:5]
        for kid in approved:
            assert authd.admin("keys", "approve", "--kid", kid).returncode == 0
        user, key = keys[approved[0]]
        assert authd.post_json("/v1/login", {"jwt": key.sign(claims(sub=user, iss="h00"))}).status == 200

        first, second = client.get("/keys"), client.get("/keys?page=2")
        assert first.status == 200 and second.status == 200
        one, two = first.table_rows("keys"), second.table_rows("keys")
        assert (len(one), len(two)) == (50, 5)
        assert sorted(r[0] for r in one + two) == sorted(keys)
        # Pending first, then active; the active ones (approved last) are on the second page.
        assert [r[4] for r in one + two] == ["pending"] * 50 + ["active"] * 5
        assert {r[0] for r in two} == set(approved)
        seen = {r[0]: r[6] for r in two}
        assert seen[approved[0]] != "never" and [seen[k] for k in approved[1:]] == ["never"] * 4, seen
        assert first.element_text("page") == "page 1" and 'id="next" href="/keys?page=2"' in first.text
        assert 'id="previous"' not in first.text
        assert 'id="previous" href="/keys?page=1"' in second.text and 'id="next"' not in second.text
        assert client.get("/keys?page=3").table_rows("keys") == []
        assert client.get("/keys?page=nonsense").table_rows("keys") == one

        # Five keys of h00 log in with the times their helpers would report (ready 10…50 ms):
        # the hosts page gives each stage's p50 and p95 over the host's keys together.
        for i, kid in enumerate(approved):
            user, key = keys[kid]
            stages = {"ready_ms": 10 * (i + 1), "match_ms": 700}
            answer = authd.post_json("/v1/login", {"jwt": key.sign(claims(sub=user, iss="h00")), "stages": stages})
            assert answer.status == 200, answer

        hosts_one, hosts_two = client.get("/hosts"), client.get("/hosts?page=2")
        listed = [r[0] for r in hosts_one.table_rows("hosts")] + [r[0] for r in hosts_two.table_rows("hosts")]
        assert listed == ["h%02d" % i for i in range(56)]
        assert len(hosts_one.table_rows("hosts")) == 50 and 'id="next" href="/hosts?page=2"' in hosts_one.text
        h00 = hosts_one.table_rows("hosts")[0]
        assert (h00[3], h00[6]) == ("55", "none: the first attestation pins it") and h00[4] != "never", h00
        assert h00[5] == "ready 30 / 50finger 700 / 7005 logins", h00
        assert hosts_one.table_rows("hosts")[1][5] == "none reported"
        assert hosts_two.table_rows("hosts")[-1][4] == "never"


def test_wrong_passwords_through_two_instances_on_one_database_count_together(tmp_path, ca):
    """On PostgreSQL the sign-in limit is the fleet's, not each instance's: three wrong
    passwords through one instance and two through the other use up the five, and the next
    attempt through either is refused without a hash. Per-instance counts would have let five
    through each. A success takes its attempt back, there as here."""
    from support.postgres import Postgres, available
    if not available():
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with Postgres() as pg:
        url = pg.create_database("console")
        with Authd(str(tmp_path / "a"), audience=AUDIENCE, tls=ca, db=url, args=CONSOLE) as a, \
                Authd(str(tmp_path / "b"), audience=AUDIENCE, tls=ca, db=url, args=CONSOLE) as b:
            create_admin(a, "ada")
            one, two = ConsoleClient(a), ConsoleClient(b)
            # A right password first: counted, then taken back.
            assert one.sign_in("ada").status == 303
            for client in (one, one, one, two, two):
                assert client.sign_in("ada", "not the password").status == 401
            for client in (one, two):
                limited = client.sign_in("ada")
                assert limited.status == 429 and "Too many failed sign-ins" in limited.element_text("signin-error")
            counts = {r["key"]: r["count"] for r in pg.query("console", "SELECT key, count FROM rate_counters")}
            assert counts.get("console:admin:ada", 0) >= 6 and counts.get("console:address:127.0.0.1", 0) >= 6, counts
            assert [r["outcome"] for r in a.audit_rows() if r["event"] == "admin_signin"] == ["accept"] + ["deny"] * 5
            # A count that cannot be reached lets nobody try (fail closed), for a stranger too.
            pg.stop()
            for client in (one, ConsoleClient(b)):
                closed = client.sign_in("bob", "a guess of twelve")
                assert closed.status == 503 and "cannot be read" in closed.element_text("signin-error"), closed
            assert "console: sign-in limit unavailable" in a.log_text()
