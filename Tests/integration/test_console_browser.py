"""The admin console in a real browser (headless Chromium through Selenium): sign in, read
the overview's figures of this test's own logins, filter the audit log (a time among the
filters), approve a pending key and see the module's next login succeed, revoke it and see
the next login fall through to the password; add a policy rule and see the module's next
login refused by it, test a case, remove the rule. The pages must raise no console error (a CSP violation would);
screenshots of each page land in build/artefacts/browser/. And the keys page paged through
by its links (issue 32). And an admin's account reset and removed on the command line while
signed in (issue 37)."""

import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.chromium import Browser, available  # noqa: E402
from support.cli import server_keys  # noqa: E402
from support.console import PASSWORD, create_admin  # noqa: E402
from support.world import PASSWORDS, World  # noqa: E402
from test_authenticator import DeviceKey, claims  # noqa: E402

pytestmark = pytest.mark.skipif(not available(), reason="chromium, chromium-driver or python3-selenium missing (make test-deps)")


def chromium_processes():
    done = subprocess.run(["pgrep", "-f", "chromium|chromedriver"], capture_output=True, text=True)
    return [line for line in done.stdout.split() if line]


@pytest.fixture
def world(tmp_path, ca):
    w = World(tmp_path, ca)
    try:
        # --host-registrations 0: the paging test registers 52 keys on one host at once.
        w.start_authenticator(args=("--admin-listen", "0", "--approval", "manual", "--host-registrations", "0"))
        yield w
    finally:
        w.close()


@pytest.fixture
def browser(world):
    before = set(chromium_processes())
    with Browser(world.ca.server_cert) as b:
        yield b
    deadline = time.monotonic() + 10
    while set(chromium_processes()) - before and time.monotonic() < deadline:
        time.sleep(0.1)
    left = set(chromium_processes()) - before
    assert not left, "chromium left running: %s" % left


def approve_button(kid):
    return 'form[action="/keys/approve"]:has(input[value="%s"]) button' % kid


def revoke_button(kid):
    return 'form[action="/keys/revoke"]:has(input[value="%s"]) button' % kid


def test_an_admin_signs_in_reads_the_figures_filters_approves_revokes_and_edits_the_policy(world, browser):
    base = world.authd.console_url
    world.enroll("alice", "finger-A")
    alice = world.kid("alice")
    assert world.authd.admin("keys", "approve", "--kid", alice).returncode == 0
    for _ in range(3):
        assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
    assert world.login("alice", scans=["finger-B"] * 3, password=PASSWORDS["alice"]).prompts == ["Password: "]
    world.enroll("bob", "finger-B")
    bob = world.kid("bob")
    create_admin(world.authd, "ada")

    browser.get(base + "/overview")
    assert browser.path() == "/signin"
    browser.fill('input[name="name"]', "ada")
    browser.fill('input[name="password"]', PASSWORD)
    browser.screenshot("01-signin")
    browser.click('#signin button[type="submit"]')
    assert browser.path() == "/overview", browser.driver.page_source[-1500:]
    cookie = browser.cookies()["fa_console"]
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Strict"
    assert browser.text("#accepted") == "Accepted logins (7 days): 3"
    assert browser.find_all("#chart rect.accepted"), "no bar for the accepted logins"
    browser.screenshot("02-overview")

    browser.get(base + "/audit")
    today = time.strftime("%Y-%m-%d", time.gmtime())
    browser.fill('#filter input[name="event"]', "login")
    browser.fill('#filter input[name="outcome"]', "accept")
    browser.fill('#filter input[name="from"]', today)
    browser.click('#filter button[type="submit"]')
    assert browser.path() == "/audit?user=&host=&event=login&outcome=accept&from=%s&to=" % today
    rows = browser.find_all("#audit tbody tr")
    assert len(rows) == 3 and all(" login accept alice testhost fa-test " in " " + r.text + " " for r in rows), \
        [r.text for r in rows]
    assert [h.text for h in browser.find_all("#audit thead th")][4:6] == ["host", "service"]
    browser.screenshot("03-audit-filtered")

    browser.get(base + "/keys")
    assert [k["status"] for k in server_keys(world) if k["kid"] == bob] == ["pending"]
    browser.screenshot("04-keys-pending")
    browser.click(approve_button(bob))
    assert browser.text("#message") == "Approved %s." % bob
    login = world.login("bob", scans=["finger-B"])
    assert login.name == "PAM_SUCCESS" and login.prompts == [], login
    browser.screenshot("05-keys-approved")

    browser.click(revoke_button(bob))
    assert browser.text("#message") == "Revoked %s." % bob
    after = world.login("bob", scans=["finger-B"], password=PASSWORDS["bob"])
    assert after.name == "PAM_SUCCESS" and after.prompts == ["Password: "], after
    browser.screenshot("06-keys-revoked")

    browser.get(base + "/hosts")
    assert "testhost" in browser.text("#hosts") and today in browser.text("#hosts")
    browser.screenshot("07-hosts")
    browser.click('#hosts a[href="/approvals?host=testhost"]')
    assert browser.path() == "/approvals?host=testhost"
    assert browser.text("#scope").startswith("Remote approvals asked by host testhost, newest first")
    browser.screenshot("07-host-approvals")

    # A rule added on the policy page refuses alice's next login by the module; tested; removed.
    browser.get(base + "/policy")
    browser.choose('#add-rule select[name="action"]', "deny")
    browser.fill('#add-rule input[name="users"]', "alice")
    browser.fill('#add-rule input[name="hosts"]', "*")
    browser.fill('#add-rule input[name="services"]', "fa-test")
    browser.click('#add-rule button[type="submit"]')
    assert browser.text("#message").startswith("Added rule "), browser.text("main")
    rule = browser.text("#message").split()[2]
    refused = world.login("alice", scans=["finger-A"], password=PASSWORDS["alice"])
    assert refused.name == "PAM_SUCCESS" and refused.prompts == ["Password: "], refused
    assert "policy_denied, rule %s" % rule in world.log_lines()[-1]
    browser.screenshot("08-policy-rule-added")
    browser.fill('#test input[name="test_user"]', "alice")
    browser.fill('#test input[name="test_host"]', "testhost")
    browser.fill('#test input[name="test_service"]', "fa-test")
    browser.click('#test button[type="submit"]')
    assert browser.text("#decision").startswith("deny by rule %s" % rule)
    browser.screenshot("09-policy-tested")
    browser.click('#rules form[action="/policy/remove"] button')
    assert browser.text("#message") == "Removed rule %s." % rule
    assert world.login("alice", scans=["finger-A"]).name == "PAM_SUCCESS"
    browser.screenshot("10-policy-rule-removed")
    assert browser.console_errors() == []

    browser.click("form.signout button")
    assert browser.path() == "/signin"
    browser.get(base + "/keys")
    assert browser.path() == "/signin"


def test_an_admin_pages_through_the_keys(world, browser):
    base = world.authd.console_url
    token = world.authd.create_token("h00")
    kids = set()
    for i in range(52):
        key, user = DeviceKey(), "u%02d" % i
        answer = world.authd.post_json("/v1/keys", {"user": user, "host": "h00", "jwk": key.jwk,
                                                    "proof": key.proof(claims(sub=user, iss="h00"))}, token=token)
        assert answer.status == 201, answer
        kids.add(key.kid)
    create_admin(world.authd, "ada")
    browser.get(base + "/signin")
    browser.fill('input[name="name"]', "ada")
    browser.fill('input[name="password"]', PASSWORD)
    browser.click('#signin button[type="submit"]')
    browser.get(base + "/keys")
    first = [r.text.split()[0] for r in browser.find_all("#keys tbody tr")]
    assert len(first) == 50 and browser.text("#page") == "page 1"
    browser.screenshot("11-keys-page-1")
    browser.click("#next")
    assert browser.path() == "/keys?page=2"
    second = [r.text.split()[0] for r in browser.find_all("#keys tbody tr")]
    assert len(second) == 2 and set(first) | set(second) == kids
    browser.screenshot("12-keys-page-2")
    browser.click("#previous")
    assert browser.path() == "/keys?page=1"
    assert [r.text.split()[0] for r in browser.find_all("#keys tbody tr")] == first
    assert browser.console_errors() == []


def sign_in(browser, base, name, password):
    browser.get(base + "/signin")
    browser.fill('input[name="name"]', name)
    browser.fill('input[name="password"]', password)
    browser.click('#signin button[type="submit"]')


def set_password(browser, link, password):
    browser.get(link)
    browser.fill('#setup input[name="password"]', password)
    browser.fill('#setup input[name="again"]', password)
    browser.click('#setup button[type="submit"]')


def test_an_admin_reset_and_removed_as_the_browser_sees_it(world, browser):
    """Issue 37: `fingerauthd admin reset` signs the admin out and makes the old password
    useless; its link works once and then says at once that it was used; `admin remove`
    ends the session and the sign-in. The console's rows carry the browser's address."""
    base = world.authd.console_url
    first = create_admin(world.authd, "ada", password=None)
    set_password(browser, first, PASSWORD)
    assert browser.path() == "/signin?done=1"
    sign_in(browser, base, "ada", PASSWORD)
    assert browser.path() == "/overview"
    assert browser.console_errors() == []

    done = subprocess.run([world.authd.binary, "admin", "reset", "ada", "--db", world.authd.db,
                           "--console-url", base], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    link = done.stdout.splitlines()[-1]
    assert link.startswith(base + "/setup?token=") and link != first

    browser.get(base + "/keys")
    assert browser.path() == "/signin", "the session of before the reset still opens pages"
    sign_in(browser, base, "ada", PASSWORD)
    assert browser.path() == "/signin" and browser.text("#signin-error") == "Wrong admin name or password."
    browser.screenshot("13-reset-old-password")

    # The link of before the reset opens no form; the new one does, once.
    browser.get(first)
    assert "This setup link is not valid" in browser.text("#setup-error") and not browser.find_all("#setup")
    set_password(browser, link, "a brand new passphrase")
    assert browser.path() == "/signin?done=1"
    sign_in(browser, base, "ada", "a brand new passphrase")
    assert browser.path() == "/overview"
    browser.get(link)
    assert not browser.find_all("#setup"), "a used link shows the password form"
    assert browser.text("#setup-error").startswith("This setup link was used already")
    assert "fingerauthd admin reset NAME" in browser.text("#setup-error")
    browser.screenshot("14-setup-link-used")

    browser.get(base + "/overview")
    assert browser.path() == "/overview"
    removed = world.authd.admin("admin", "remove", "ada")
    assert removed.returncode == 0, removed.stderr
    browser.get(base + "/overview")
    assert browser.path() == "/signin", "the removed admin's session still opens pages"
    sign_in(browser, base, "ada", "a brand new passphrase")
    assert browser.text("#signin-error") == "Wrong admin name or password."

    rows = [r for r in world.authd.audit_rows() if r["event"].startswith("admin_")]
    assert [(r["event"], r["outcome"], r["peer"]) for r in rows] == [
        ("admin_create", "accept", "local"), ("admin_setup", "accept", "127.0.0.1"),
        ("admin_signin", "accept", "127.0.0.1"), ("admin_reset", "accept", "local"),
        ("admin_signin", "deny", "127.0.0.1"), ("admin_setup", "accept", "127.0.0.1"),
        ("admin_signin", "accept", "127.0.0.1"), ("admin_remove", "accept", "local"),
        ("admin_signin", "deny", "127.0.0.1")], rows
