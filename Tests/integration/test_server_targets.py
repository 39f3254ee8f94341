"""fingerauthd's targets as Package.swift declares them (`swift package dump-package`): each
layer reaches only what its job needs, every target declares what its sources import, and
an audit row's words are spelled in one place only."""

import os
import pathlib
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support.package_graph import imports, package_targets, reach  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[2]
SOURCES = REPO / "Sources"

# fingerauthd's libraries and its executable.
SERVER = ["FingerAuthDomain", "FingerAuthStore", "FingerAuthWeb", "FingerAuthTransport", "FingerAuthConsole",
          "FingerAuthDaemon"]
# What only fingerauthd may link: its layers and the C libraries of its stores and transport.
SERVER_ONLY = {"FingerAuthDomain", "FingerAuthStore", "FingerAuthWeb", "FingerAuthTransport", "FingerAuthConsole",
               "CSQLite", "CPostgres", "CMicroHTTPD", "CGnuTLS"}
HOST_PRODUCTS = ["PAMFingerAuth", "FingerAuthLogin", "FingerAuthAgent", "FingerAuthCLI"]


@pytest.fixture(scope="module")
def targets():
    return package_targets()


def c_bridges(targets):
    return {name for name, target in targets.items() if target["type"] == "system" or name.startswith("C")}


def test_the_domain_is_plain_swift_over_core(targets):
    """The service, the verifier, the limits and the ports: no C bridge, not even through
    another target; cryptography reaches them through the key formats' protocols."""
    assert reach(targets, "FingerAuthDomain") == {"FingerAuthCore", "FingerAuthKeyFormats"}
    assert not reach(targets, "FingerAuthCore") & c_bridges(targets)


def test_http_values_are_plain_swift_shared_by_the_transport_and_the_console(targets):
    """HTTPRequest, HTTPResponse and the console's port: over Core only, reached by the
    transport and the console, never by the domain (whose reach is Core alone, above)."""
    assert reach(targets, "FingerAuthWeb") == {"FingerAuthCore"}
    assert "FingerAuthWeb" in reach(targets, "FingerAuthTransport")
    assert "FingerAuthWeb" in reach(targets, "FingerAuthConsole")
    assert "FingerAuthWeb" not in reach(targets, "FingerAuthStore")


# HTTP as Swift source spells it: the message values and their target, a status code put
# into an answer or compared, a header's name, a method, a path of the login API.
HTTP_IN_SWIFT = re.compile(
    r"""\bHTTP(?:Request|Response)\b|\bFingerAuthWeb\b|\.error\(\s*\d{3}\b|\bstatus:\s*\d{3}\b"""
    r"""|\bstatus\s*(?:==|!=|<|>)\s*\d{3}\b"""
    r'|"(?:Retry-After|WWW-Authenticate|Content-Type|Authorization|Allow|Pragma|Cookie|Origin)"'
    r"""|"(?:GET|HEAD|POST|PUT|DELETE)"|"/(?:v1|oauth2|login|pubkey|offline-sync|healthz|metrics)\b""")


def http_lines(target):
    """The lines of Sources/<target> outside comments that spell HTTP."""
    hits = []
    for path in sorted((SOURCES / target).rglob("*.swift")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.lstrip().startswith("//") and HTTP_IN_SWIFT.search(line):
                hits.append("%s:%d: %s" % (path.relative_to(SOURCES), number, line.strip()))
    return hits


def test_the_domain_speaks_no_http():
    """The service takes an operation and the request's facts and ends in an `Outcome`; the
    transport routes method and path and says each outcome as status, headers and body
    (`LoginAPI`, `AnswerMapping`). The pattern finds the transport's answers, so a status,
    header or path moved back into the domain is found as well."""
    assert not http_lines("FingerAuthDomain"), "\n".join(http_lines("FingerAuthDomain"))
    mapping = [hit for hit in http_lines("FingerAuthTransport") if "AnswerMapping.swift" in hit]
    routes = [hit for hit in http_lines("FingerAuthTransport") if "LoginAPI.swift" in hit]
    assert any(".error(" in hit or "status:" in hit for hit in mapping), mapping
    assert any('"POST"' in hit for hit in routes) and any('"/v1/' in hit for hit in routes), routes


def test_the_transport_knows_the_service_and_nothing_of_the_stores(targets):
    reached = reach(targets, "FingerAuthTransport")
    assert "FingerAuthDomain" in reached
    assert not reached & {"FingerAuthStore", "CSQLite", "CPostgres", "FingerAuthConsole"}, reached


def test_the_store_and_the_console_reach_neither_http_nor_each_other(targets):
    store, console = reach(targets, "FingerAuthStore"), reach(targets, "FingerAuthConsole")
    assert not store & {"FingerAuthTransport", "FingerAuthConsole", "CMicroHTTPD", "CGnuTLS"}, store
    assert not console & {"FingerAuthStore", "FingerAuthTransport", "CSQLite", "CPostgres", "CMicroHTTPD", "CGnuTLS"}, console


def test_only_fingerauthd_links_the_authenticator(targets):
    """The module, the login helper, the agent and the command line reach none of
    fingerauthd's layers, nor SQLite, libpq, libmicrohttpd or GnuTLS."""
    for product in HOST_PRODUCTS:
        assert not reach(targets, product) & SERVER_ONLY, product
    assert set(targets["FingerAuthDaemon"]["deps"]) >= {"FingerAuthDomain", "FingerAuthStore", "FingerAuthTransport",
                                                        "FingerAuthConsole"}


@pytest.mark.parametrize("target", SERVER)
def test_each_server_target_declares_what_it_imports_and_nothing_more(targets, target):
    """A module found only through another target's dependency would hide a layer crossing;
    a dependency nothing imports links what is not used."""
    assert imports(target) == set(targets[target]["deps"]), target


# An audit outcome as Swift or SQL spells it: "accept", 'deny', or `outcome = "error"`.
OUTCOME_LITERAL = re.compile(r"""["'](?:accept|deny)["']|outcome\s*(?:[:=]|==|!=)\s*["']""")
# Where the words may stand: their enum, and the schemas' partial indexes (migrations are
# never edited once released).
OUTCOME_HOME = {"FingerAuthDomain/Registry/AuditVocabulary.swift", "FingerAuthStore/SQLite/SQLiteSchema.swift",
                "FingerAuthStore/Postgres/PostgresSchema.swift"}


def test_no_audit_outcome_is_spelled_outside_its_enum():
    """Code decides by `AuditOutcome`; the text exists only where the enum turns it into the
    database's, the log line's and the admin tools' words."""
    hits = []
    for target in SERVER:
        for path in sorted((SOURCES / target).rglob("*.swift")):
            relative = str(path.relative_to(SOURCES))
            if relative in OUTCOME_HOME:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if not line.lstrip().startswith("//") and OUTCOME_LITERAL.search(line):
                    hits.append("%s:%d: %s" % (relative, number, line.strip()))
    assert not hits, "\n".join(hits)
