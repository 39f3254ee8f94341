"""The console's accounts over their life (issue 37, point 6), against the real fingerauthd
over TLS on loopback: `fingerauthd admin reset NAME` (password cleared, sessions ended, a
new one-time setup link) and `admin remove NAME` (account and sessions gone), both audited
with the operator; a used, expired or unknown setup link says so on GET, before any form;
the console's actions audited with the admin's address (through a trusted proxy too), the
command line's with `local`. And the abuse: a reset link of one admin setting another's
password, the link from before a reset, names that do not exist. The same account's life
in Chromium is in test_console_browser.py."""

import base64
import os
import sqlite3
import sys
import urllib.parse


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from support.cli import server_keys  # noqa: E402
from support.console import PASSWORD, ConsoleClient, create_admin  # noqa: E402
from support.world import World  # noqa: E402
from test_console import CONSOLE, world  # noqa: E402,F401  (fingerauthd with a console, approval manual)
from test_policy import db, server  # noqa: E402,F401  (store fixtures: sqlite and postgresql)

NEW_PASSWORD = "another horse, another staple"


def admin_command(authd, command, *args):
    """`fingerauthd admin COMMAND ARGS…` on the daemon's database (and console URL)."""
    url = () if command == "remove" else ("--console-url", authd.console_url)
    return authd.admin("admin", command, *args, *url)


def reset(authd, name):
    """`fingerauthd admin reset NAME`: its new setup link (the last line printed)."""
    done = admin_command(authd, "reset", name)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("reset admin %s: password cleared, console sessions ended;" % name), done.stdout
    link = done.stdout.splitlines()[-1]
    assert link.startswith(authd.console_url + "/setup?token="), done.stdout
    return link


def token_of(link):
    return urllib.parse.parse_qs(urllib.parse.urlparse(link).query)["token"][0]


def set_password(client, token, password):
    return client.post("/setup", {"token": token, "password": password, "again": password})


def signed_in(authd, name, password=PASSWORD):
    client = ConsoleClient(authd)
    answer = client.sign_in(name, password)
    assert answer.status == 303 and client.header(answer, "Location") == ["/overview"], answer
    return client


def admin_rows(authd):
    return [r for r in authd.audit_rows() if r["event"].startswith("admin_")]


def test_reset_ends_the_password_and_the_sessions_and_its_link_works_once(world):
    create_admin(world.authd, "ada")
    session = signed_in(world.authd, "ada")
    assert session.get("/overview").status == 200
    link = reset(world.authd, "ada")
    assert world.authd.admin("admin", "list").stdout == "ada\tsetup pending\n"

    # The session of before is over at its next request; the old password opens nothing.
    page = session.get("/overview")
    assert page.status == 303 and session.header(page, "Location") == ["/signin"], page
    assert "fa_console" not in session.cookies
    assert "console: a session of ada ended: the account was reset or removed" in world.authd.log_text()
    assert ConsoleClient(world.authd).sign_in("ada", PASSWORD).status == 401

    # The new link: its form, once.
    client = ConsoleClient(world.authd)
    form = client.get(link[len(world.authd.console_url):])
    assert form.status == 200 and form.field("token") == token_of(link), form
    done = set_password(client, token_of(link), NEW_PASSWORD)
    assert done.status == 303 and client.header(done, "Location") == ["/signin?done=1"], done
    assert signed_in(world.authd, "ada", NEW_PASSWORD).get("/overview").status == 200
    assert ConsoleClient(world.authd).sign_in("ada", PASSWORD).status == 401

    rows = admin_rows(world.authd)
    assert [(r["event"], r["outcome"], r["admin"]) for r in rows] == [
        ("admin_create", "accept", "ada"), ("admin_setup", "accept", "ada"), ("admin_signin", "accept", "ada"),
        ("admin_reset", "accept", "ada"), ("admin_signin", "deny", "ada"), ("admin_setup", "accept", "ada"),
        ("admin_signin", "accept", "ada"), ("admin_signin", "deny", "ada")]
    # The command line's rows: `local`, and who ran it (the operator, as the other admin commands record).
    for row in (rows[0], rows[3]):
        assert row["peer"] == "local" and row["reason"].startswith("by "), row
    # The console's: the admin's address, not `console` or `local`.
    assert {r["peer"] for r in rows if r["event"] in ("admin_setup", "admin_signin")} == {"127.0.0.1"}
    assert token_of(link) not in world.authd.log_text() and NEW_PASSWORD not in world.authd.log_text()


def test_a_used_expired_or_unknown_setup_link_says_so_on_get_before_any_form(world):
    link = create_admin(world.authd, "ada", password=None)
    token = token_of(link)
    client = ConsoleClient(world.authd)
    assert set_password(client, token, PASSWORD).status == 303

    def closed(page, status, words):
        assert page.status == status, page
        assert words in page.element_text("setup-error"), page
        assert "fingerauthd admin reset NAME" in page.element_text("setup-error"), page
        assert 'id="setup"' not in page.text and 'name="password"' not in page.text, page
        assert token not in page.text and "ada" not in page.text, page
        assert client.header(page, "Content-Security-Policy"), page

    used = client.get("/setup?token=" + token)
    closed(used, 410, "This setup link was used already")
    # A POST to it fails the same way, and the password stays the one that was set.
    closed(set_password(client, token, NEW_PASSWORD), 410, "This setup link was used already")
    assert ConsoleClient(world.authd).sign_in("ada", NEW_PASSWORD).status == 401
    signed_in(world.authd, "ada")

    pending = create_admin(world.authd, "bob", password=None)
    connection = sqlite3.connect(world.authd.db, timeout=5)
    with connection:
        connection.execute("UPDATE admins SET setup_expires = 1 WHERE name = 'bob'")
    connection.close()
    expired = client.get(pending[len(world.authd.console_url):])
    closed(expired, 410, "This setup link has expired: a link lasts 24 hours")
    closed(set_password(client, token_of(pending), PASSWORD), 410, "has expired")

    made_up = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
    closed(client.get("/setup?token=" + made_up), 404, "This setup link is not valid")
    closed(client.get("/setup"), 404, "This setup link is not valid")
    # The closed links set nothing: one setup row, ada's first.
    assert [(r["event"], r["outcome"], r["admin"]) for r in admin_rows(world.authd)] == [
        ("admin_create", "accept", "ada"), ("admin_setup", "accept", "ada"), ("admin_signin", "deny", "ada"),
        ("admin_signin", "accept", "ada"), ("admin_create", "accept", "bob")]
    assert world.authd.admin("admin", "list").stdout == "ada\tready\nbob\tsetup pending\n"


def test_the_link_from_before_a_reset_is_refused_and_the_new_one_works(world):
    first = create_admin(world.authd, "ada", password=None)
    second = reset(world.authd, "ada")
    client = ConsoleClient(world.authd)
    page = client.get(first[len(world.authd.console_url):])
    assert page.status == 404 and "a newer link replaced it" in page.element_text("setup-error"), page
    assert set_password(client, token_of(first), PASSWORD).status == 404
    assert ConsoleClient(world.authd).sign_in("ada", PASSWORD).status == 401
    assert set_password(client, token_of(second), PASSWORD).status == 303
    signed_in(world.authd, "ada")


def test_a_reset_link_of_one_admin_sets_no_other_admins_password(world):
    create_admin(world.authd, "ada")
    create_admin(world.authd, "bob")
    bob = signed_in(world.authd, "bob")
    link = reset(world.authd, "ada")
    # The form names no account: the link alone decides whose password it sets. A name
    # slipped into the form changes nothing.
    client = ConsoleClient(world.authd)
    done = client.post("/setup", {"token": token_of(link), "password": NEW_PASSWORD, "again": NEW_PASSWORD,
                                  "name": "bob", "admin": "bob"})
    assert done.status == 303
    assert ConsoleClient(world.authd).sign_in("bob", NEW_PASSWORD).status == 401
    signed_in(world.authd, "bob", PASSWORD)
    signed_in(world.authd, "ada", NEW_PASSWORD)
    # bob's session was not touched by ada's reset.
    assert bob.get("/overview").status == 200


def test_remove_ends_the_sessions_and_the_sign_in(world):
    world.enroll("alice", "finger-A")
    kid = world.kid("alice")
    create_admin(world.authd, "ada")
    create_admin(world.authd, "bob")
    ada = signed_in(world.authd, "ada")
    bob = signed_in(world.authd, "bob")
    csrf, cookie = ada.csrf("/keys"), ada.cookies["fa_console"]
    done = admin_command(world.authd, "remove", "ada")
    assert done.returncode == 0 and done.stdout == "removed admin ada; their console sessions ended\n", done
    assert done.stderr == ""
    # The removed admin's session, with its own CSRF token, approves nothing.
    refused = ada.post("/keys/approve", {"kid": kid, "csrf": csrf})
    assert refused.status == 303 and ada.header(refused, "Location") == ["/signin"], refused
    assert [k["status"] for k in server_keys(world) if k["kid"] == kid] == ["pending"]
    replay = ConsoleClient(world.authd)
    replay.cookies["fa_console"] = cookie
    assert replay.get("/overview").status == 303
    assert ConsoleClient(world.authd).sign_in("ada", PASSWORD).status == 401
    assert bob.get("/overview").status == 200
    assert world.authd.admin("admin", "list").stdout == "bob\tready\n"

    # The last one may go too; the command says how to make a new one.
    last = admin_command(world.authd, "remove", "bob")
    assert last.returncode == 0
    assert "no console admin is left; 'fingerauthd admin create NAME' makes one" in last.stderr
    assert bob.get("/overview").status == 303
    assert world.authd.admin("admin", "list").stdout == ""
    removed = [r for r in admin_rows(world.authd) if r["event"] == "admin_remove"]
    assert [(r["admin"], r["outcome"], r["peer"]) for r in removed] == [("ada", "accept", "local"), ("bob", "accept", "local")]
    assert all(r["reason"].startswith("by ") for r in removed)
    # The name is free again.
    create_admin(world.authd, "ada")
    signed_in(world.authd, "ada")


def test_unknown_or_malformed_names_are_refused_and_change_nothing(world):
    create_admin(world.authd, "ada")
    before = admin_rows(world.authd)
    for command in ("reset", "remove"):
        done = admin_command(world.authd, command, "nobody")
        assert done.returncode == 1 and done.stdout == "", done
        assert done.stderr == ("fingerauthd: admin %s: no admin named nobody; 'fingerauthd admin list' names them, "
                               "'fingerauthd admin create nobody' makes one\n" % command), done.stderr
        bad = admin_command(world.authd, command, "Ada Lovelace")
        assert bad.returncode == 2 and "'Ada?Lovelace' is not an admin's name" in bad.stderr, bad
        missing = world.authd.admin("admin", command)
        assert missing.returncode == 2 and "give the admin's name: fingerauthd admin %s NAME" % command in missing.stderr
    assert admin_rows(world.authd) == before
    signed_in(world.authd, "ada")
    # An account named before the user-name rule (doctor lists it) can still be removed.
    connection = sqlite3.connect(world.authd.db, timeout=5)
    with connection:
        connection.execute("INSERT INTO admins (name, created) VALUES ('Old.Admin', 0)")
    connection.close()
    assert admin_command(world.authd, "create", "Old.Admin").returncode == 2
    old = admin_command(world.authd, "remove", "Old.Admin")
    assert old.returncode == 0 and old.stdout == "removed admin Old.Admin; their console sessions ended\n", old
    exists = admin_command(world.authd, "create", "ada")
    assert exists.returncode == 1 and "'fingerauthd admin reset ada' gives it a new setup link" in exists.stderr


def test_console_actions_are_audited_with_the_address_behind_a_trusted_proxy(tmp_path, ca):
    w = World(tmp_path, ca)
    try:
        w.start_authenticator(args=CONSOLE + ("--approval", "manual", "--trusted-proxies", "127.0.0.1/32"))
        w.enroll("alice", "finger-A")
        kid = w.kid("alice")
        link = create_admin(w.authd, "ada", password=None)
        forwarded = {"X-Forwarded-For": "198.51.100.7"}
        client = ConsoleClient(w.authd)
        done = client.request("POST", "/setup", form={"token": token_of(link), "password": PASSWORD, "again": PASSWORD},
                              headers=forwarded)
        assert done.status == 303, done
        form = client.get("/signin")
        signed = client.request("POST", "/signin", form={"csrf": form.field("csrf"), "name": "ada", "password": PASSWORD},
                                headers=forwarded)
        assert signed.status == 303, signed
        approved = client.request("POST", "/keys/approve", form={"kid": kid, "csrf": client.csrf("/keys")},
                                  headers=forwarded)
        assert approved.status == 200 and [k["status"] for k in server_keys(w) if k["kid"] == kid] == ["active"]
        rows = admin_rows(w.authd)
        assert [(r["event"], r["peer"]) for r in rows] == [
            ("admin_create", "local"), ("admin_setup", "198.51.100.7"), ("admin_signin", "198.51.100.7"),
            ("admin_approve", "198.51.100.7")], rows
    finally:
        w.close()


def test_reset_remove_and_a_used_link_on_both_stores(tmp_path, ca, db):
    """The same SQL on SQLite and PostgreSQL: a used link, a reset that ends the session, a
    removal."""
    from support.authd import Authd  # noqa: E402
    from support.world import AUDIENCE  # noqa: E402
    with Authd(str(tmp_path / "a"), audience=AUDIENCE, tls=ca, db=db, args=CONSOLE) as authd:
        link = create_admin(authd, "ada")
        session = signed_in(authd, "ada")
        client = ConsoleClient(authd)
        assert client.get(link[len(authd.console_url):]).status == 410
        fresh = reset(authd, "ada")
        assert session.get("/overview").status == 303
        assert client.get(link[len(authd.console_url):]).status == 404
        assert set_password(client, token_of(fresh), NEW_PASSWORD).status == 303
        assert client.get(fresh[len(authd.console_url):]).status == 410
        again = signed_in(authd, "ada", NEW_PASSWORD)
        assert authd.admin("admin", "remove", "ada").returncode == 0
        assert again.get("/overview").status == 303
        assert authd.admin("admin", "list").stdout == ""
