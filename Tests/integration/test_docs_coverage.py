"""Nothing the programs know is undocumented, and the documentation holds together.

What is to be documented is read from the source of truth, never typed here: the keys of
fingerauth.conf (OptionTable's entries, the key families of `Options.set`, `conf` of the
loader) and the texts an admin may replace (`TextName`); the keys of fingerauthd.conf
(`ConfigFile.keys`); every command, subcommand and option of fingerauth, fingerauthd,
fingerauth-agent and fingerauth-watcher (their usage texts, and fingerauthd's
`Usage.entries`); every endpoint of the login API (`LoginAPI.route` and its metric
labels). Each must be in its reference page under docs/reference/ and in a manual page, so
that the two say the same. A key added without its documentation fails here, naming it.

Also: README.md stays a front door (at most 250 lines, no link out of the repository), the
trial's commands in the tutorial are the README's, and every relative link of README.md
and docs/ reaches a file (and a heading, for a `#fragment`). No build needed.

    /usr/bin/python3 -m pytest -q -p no:cacheprovider Tests/integration/test_docs_coverage.py
"""

import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
SOURCES = REPO / "Sources"
REFERENCE = REPO / "docs" / "reference"
README_MAX_LINES = 250


# --- Reading the documentation ---------------------------------------------------------

def markdown_pages():
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def roff_arguments(text):
    """A macro line's arguments: "quoted" ones (with "" for a quote) or words."""
    return [quoted.replace('""', '"') if quoted is not None and word == "" else word
            for quoted, word in re.findall(r'"((?:[^"]|"")*)"|(\S+)', text)]


def roff_unescape(text):
    text = re.sub(r"\\f(?:\[[^\]]*\]|\(..|.)", "", text)
    for escape, plain in (("\\-", "-"), ("\\(em", "\u2014"), ("\\(en", "\u2013"), ("\\(aq", "'"), ("\\(dq", '"'),
                          ("\\&", ""), ("\\ ", " "), ("\\e", "\\")):
        text = text.replace(escape, plain)
    return text


ALTERNATING = {"BR", "BI", "IR", "IB", "RB", "RI"}
SPACED = {"B", "I", "SM", "SB", "SH", "SS", "IP"}


def roff_plain(source):
    """A manual page as the reader sees its words: macros gone, fonts and escapes resolved
    (`.BI \\-\\-listen " ADDR:PORT"` -> `--listen ADDR:PORT`)."""
    lines = []
    for line in source.splitlines():
        if line.startswith(('.\\"', "'\\\"")):
            continue
        macro = re.match(r"^[.']([A-Za-z]{1,2})\b\s*(.*)$", line)
        if macro:
            name, rest = macro.groups()
            if name in ALTERNATING:
                line = "".join(roff_arguments(rest))
            elif name in SPACED:
                line = " ".join(roff_arguments(rest))
            else:
                line = ""
        lines.append(roff_unescape(line))
    return "\n".join(lines)


def roff_terms(source):
    """The words a manual page sets in bold or italics, each alone and, for an alternating
    macro, its arguments joined (`.BI text. NAME` -> `text.NAME`)."""
    terms = set()
    for line in source.splitlines():
        macro = re.match(r"^[.']([A-Za-z]{1,2})\b\s*(.*)$", line)
        if macro and (macro.group(1) in ALTERNATING or macro.group(1) in {"B", "I"}):
            arguments = [roff_unescape(a).strip() for a in roff_arguments(macro.group(2))]
            joined = "".join(arguments)
            terms.update(a for a in arguments if a)
            terms.update({joined, re.split(r"[\s=]", joined, maxsplit=1)[0]})
            terms.update(" ".join(arguments).split())
        for span in re.findall(r"\\f[BI](.*?)\\f[RP]", line):
            terms.add(roff_unescape(span).strip())
    return terms


def markdown_terms(text):
    """What a page sets as code: each `span`, and its first word (`key_store = tpm` names
    `key_store`)."""
    terms = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        span = span.strip()
        terms.add(span)
        terms.add(re.split(r"[\s=]", span, maxsplit=1)[0])
    return terms


class Documents:
    """The docs/ tree and the manual pages, as text and as terms."""

    def __init__(self):
        self.docs = {path: path.read_text() for path in sorted((REPO / "docs").rglob("*.md"))}
        self.man = {path: roff_plain(path.read_text()) for path in sorted((REPO / "man").glob("*.[1-8]"))}
        self.man_terms = {path: roff_terms(path.read_text()) for path in self.man}

    def page(self, relative):
        path = REPO / relative
        assert path in self.docs or path in self.man, "no such page: %s" % relative
        return self.docs.get(path) or self.man[path]

    def terms(self, relative):
        path = REPO / relative
        return self.man_terms[path] if path in self.man_terms else markdown_terms(self.docs[path])

    def all_text(self):
        return "\n".join([*self.docs.values(), *self.man.values()])


@pytest.fixture(scope="module")
def documents():
    return Documents()


def undocumented(items, places, found):
    """`items` each checked in every one of `places` with `found(item, place)`: the lines
    naming what is missing where."""
    return ["%s: not in %s" % (item, ", ".join(missing)) for item in sorted(items)
            for missing in [[place for place in places if not found(item, place)]] if missing]


# --- Reading the sources ---------------------------------------------------------------

def swift(relative):
    path = SOURCES / relative
    assert path.exists(), "the source of truth moved: %s" % relative
    return path.read_text()


def swift_literals(text):
    """The multi-line string literals of a Swift file, their indentation removed."""
    return [re.sub(r"(?m)^[ \t]+", "", body) for body in re.findall(r'"""\n(.*?)"""', text, re.S)]


def block(text, start, end):
    """The text from the first `start` to the next `end` after it."""
    begin = text.index(start)
    return text[begin:text.index(end, begin + len(start))]


def host_config_keys():
    """fingerauth.conf's keys: every entry of OptionTable, the families `Options.set` reads
    by prefix (`text.NAME`, `claim.NAME`), and `conf` (the pam.d line's)."""
    table = block(swift("FingerAuthLoginDomain/Options/OptionTable.swift"), "static let entries", "\n    ]\n")
    keys = set(re.findall(r'\bE\.\w+\(\s*"([a-z_]+)"', table))
    families = re.findall(r'key\.hasPrefix\("([a-z_]+)\."\)', swift("FingerAuthLoginDomain/Options/Options.swift"))
    keys.update(family + ".NAME" for family in families)
    keys.update(re.findall(r'key (?:==|!=) "([a-z_]+)"', swift("FingerAuthLoginDomain/Options/OptionsLoader.swift")))
    assert len(keys) >= 30 and "url" in keys and "text.NAME" in keys and "conf" in keys, sorted(keys)
    return keys


def text_names():
    """The names of the texts `text.NAME` replaces (TextName's raw values)."""
    enum = block(swift("FingerAuthLoginDomain/Decisions/PromptTexts.swift"), "enum TextName", "var english")
    names = {raw or case for case, raw in re.findall(r'^\s*case (\w+)(?: = "([a-z_]+)")?\s*$', enum, re.M)}
    assert len(names) >= 9 and "place_finger" in names, sorted(names)
    return names


def authenticator_config_keys():
    """fingerauthd.conf's keys (`ConfigFile.keys`), each also a flag of `serve`."""
    keys = set(re.findall(r'"([a-z][a-z0-9-]*)"', block(swift("FingerAuthDaemon/ConfigFile.swift"),
                                                              "static let keys", "]\n")))
    assert len(keys) >= 30 and "listen" in keys, sorted(keys)
    return keys


# The programs a person runs, and the files whose usage texts they print.
PROGRAMS = {
    "fingerauth": ("FingerAuthCLI", "man/fingerauth.1"),
    "fingerauthd": ("FingerAuthDaemon", "man/fingerauthd.8"),
    "fingerauth-agent": ("FingerAuthAgent", "man/fingerauth-agent.8"),
    "fingerauth-watcher": ("FingerAuthWatcher", "man/fingerauth-watcher.8"),
}


def usage_texts(program):
    """The usage texts `program --help` and `program COMMAND --help` print: fingerauthd's
    `Usage` entries, the others' literals that start with `usage:`."""
    directory = SOURCES / PROGRAMS[program][0]
    if program == "fingerauthd":
        texts = swift_literals(swift("FingerAuthDaemon/Usage.swift"))
        texts += re.findall(r'static let adminOptions = "(.*)"', swift("FingerAuthDaemon/Usage.swift"))
    else:
        texts = [literal for path in sorted(directory.glob("*.swift")) for literal in swift_literals(path.read_text())
                 if re.search(r"(?m)^usage: ", literal)]
    assert texts, "no usage text found for %s in %s" % (program, directory)
    return texts


def options_of(program):
    return {flag for text in usage_texts(program) for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text)}


def fingerauth_commands():
    """[words] of every fingerauth command and subcommand: the commands of the main usage,
    and the subcommands each synopsis names (`fingerauth key create …`, `fingerauth trial
    start | touch … | stop`)."""
    main = next(text for text in usage_texts("fingerauth") if "commands:" in text)
    commands = re.findall(r"^([a-z][a-z-]*) +\S", block(main, "commands:", "\n\n"), re.M)
    assert len(commands) >= 10, commands
    found = [[command] for command in commands]
    for text in usage_texts("fingerauth"):
        for line in text.splitlines():
            synopsis = re.match(r"^(?:usage: +)?fingerauth ([a-z][a-z-]*) (.*)$", line)
            if not synopsis:
                break  # the synopsis ends at the first line that is not one
            command, rest = synopsis.groups()
            for piece in split_alternatives(rest) if command in commands else []:
                word = re.match(r"([a-z][a-z-]*)(?:\s|$)", piece.strip())
                if word and [command, word.group(1)] not in found:
                    found.append([command, word.group(1)])
    assert any(len(words) == 2 for words in found), found
    return found


def split_alternatives(text):
    """`a [x | y] | b (c | d)` -> [`a [x | y]`, `b (c | d)`]: the `|` outside brackets."""
    pieces, depth, current = [], 0, ""
    for character in text:
        depth += character in "[(" and 1 or character in "])" and -1 or 0
        if character == "|" and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += character
    return pieces + [current]


def fingerauthd_commands():
    """[words] of every fingerauthd command (`Usage.entries`)."""
    entries = re.findall(r"words: \[([^\]]*)\]", swift("FingerAuthDaemon/Usage.swift"))
    found = [words for words in (re.findall(r'"([^"]+)"', entry) for entry in entries) if words]
    assert len(found) >= 20 and ["serve"] in found, found
    return found


def endpoints():
    """{(method or None, path)} of the login API: each path `route` names with the methods
    its branch allows, and the templated paths of its metric labels (`/v1/keys/{kid}`)."""
    source = swift("FingerAuthTransport/LoginAPI.swift")
    route = block(source, "static func route(", "\n    }\n")
    found = set()
    for paths, branch in re.findall(r'case ((?:"/[^"]*"(?:, )?)+):(.*?)(?=\n\s*case "/|\n\s*default:)', route, re.S):
        methods = set(re.findall(r'"(GET|HEAD|POST|PUT|PATCH|DELETE)"', branch))
        assert methods, "no method found for %s" % paths
        if "GET" in methods:
            methods.discard("HEAD")  # a GET without its body: documented with the GET
        found.update((method, path) for path in re.findall(r'"(/[^"]*)"', paths) for method in methods)
    label = block(source, "static func label(", "\n    }\n")
    found.update((None, path) for path in re.findall(r'"(/[^"]*\{[^"]*)"', label))
    assert len(found) >= 15 and ("POST", "/v1/login") in found and (None, "/v1/keys/{kid}") in found, found
    return found


# --- Matching ----------------------------------------------------------------------------

def names_command(text, program, words, heading=False):
    """`program w1 w2` in the text; the last word may stand among alternatives
    (`fingerauth key create|show|rotate`, `policy list | add`). With `heading`, in the
    program's own manual page, also a line that starts with the words (COMMANDS' `.B key
    create`)."""
    pattern = ""
    for word in words[:-1]:
        pattern += re.escape(word) + r"\s+"
    pattern += r"(?:[a-z][\w-]*\s*\\?\|\s*)*" + re.escape(words[-1]) + r"(?![\w-])"
    if re.search(r"(?<![\w/-])%s\s+%s" % (re.escape(program), pattern), text):
        return True
    return heading and re.search(r"(?m)^\s*" + pattern, text) is not None


def names_option(text, option):
    return re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(option), text) is not None


def names_endpoint(text, method, path):
    """`METHOD path` (or the path alone for a template), a `{name}` standing for any
    placeholder: `<kid>`, `KID`, `{kid}`."""
    pattern = ""
    for part in re.split(r"(\{[^}]*\})", path):
        pattern += r"(?:<[^>\s]+>|\{[^}\s]+\}|[A-Z][A-Z_]*)" if part.startswith("{") else re.escape(part)
    pattern += r"(?![\w/-])"
    if method is not None:
        pattern = r"\b%s\s+(?:`\s*)?%s" % (method, pattern)
    return re.search(pattern, text) is not None


# --- What must be documented -------------------------------------------------------------

def test_every_fingerauth_conf_key_is_in_the_reference_and_a_manual_page(documents):
    """fingerauth.conf(5) or pam_fingerauth(8), and docs/reference/fingerauth-conf.md."""
    places = ["docs/reference/fingerauth-conf.md", "man/fingerauth.conf.5 or man/pam_fingerauth.8"]

    def found(key, place):
        pages = place.split(" or ")
        return any(key in documents.terms(page) for page in pages)
    missing = undocumented(host_config_keys(), places, found)
    assert not missing, "fingerauth.conf keys without documentation:\n" + "\n".join(missing)


def test_every_replaceable_text_is_named(documents):
    places = ["docs/reference/fingerauth-conf.md", "man/fingerauth.conf.5"]
    missing = undocumented(text_names(), places, lambda name, place: name in documents.terms(place))
    assert not missing, "text.NAME names without documentation:\n" + "\n".join(missing)


def test_every_fingerauthd_conf_key_is_in_the_reference_and_the_manual_page(documents):
    places = ["docs/reference/fingerauthd-conf.md", "man/fingerauthd.8"]

    def found(key, place):
        terms = documents.terms(place)
        return key in terms or "--" + key in terms
    missing = undocumented(authenticator_config_keys(), places, found)
    assert not missing, "fingerauthd.conf keys without documentation:\n" + "\n".join(missing)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_every_option_of_every_program_is_documented(documents, program):
    """Each `--option` a usage text names: in docs/ and in the program's manual page. A
    `serve` option is also a key of fingerauthd.conf: its row in that reference names it."""
    places = ["docs/", PROGRAMS[program][1]]
    docs = "\n".join(documents.docs.values())
    keys = authenticator_config_keys() & documents.terms("docs/reference/fingerauthd-conf.md")

    def found(option, place):
        if place == "docs/" and program == "fingerauthd" and option[2:] in keys:
            return True
        return names_option(docs if place == "docs/" else documents.page(place), option)
    missing = undocumented(options_of(program), places, found)
    assert not missing, "%s options without documentation:\n%s" % (program, "\n".join(missing))


@pytest.mark.parametrize("program, commands", [("fingerauth", fingerauth_commands),
                                               ("fingerauthd", fingerauthd_commands)])
def test_every_command_and_subcommand_is_documented(documents, program, commands):
    """In docs/reference/commands.md, and in the program's manual page."""
    places = ["docs/reference/commands.md", PROGRAMS[program][1]]
    missing = undocumented([" ".join(words) for words in commands()], places,
                           lambda command, place: names_command(documents.page(place), program, command.split(),
                                                                heading=place.startswith("man/")))
    assert not missing, "%s commands without documentation:\n%s" % (program, "\n".join(missing))


def test_every_endpoint_is_in_the_api_reference_and_the_manual_page(documents):
    places = ["docs/reference/http-api.md", "man/fingerauthd.8"]
    items = {("%s %s" % (method, path)) if method else path for method, path in endpoints()}

    def found(item, place):
        method, _, path = item.rpartition(" ")
        return names_endpoint(documents.page(place), method or None, path)
    missing = undocumented(items, places, found)
    assert not missing, "endpoints without documentation:\n" + "\n".join(missing)


def test_every_manual_page_is_in_the_index(documents):
    index = documents.page("docs/reference/man-pages.md")
    missing = [path.name for path in sorted((REPO / "man").glob("*.[1-8]"))
               if "(../../man/%s)" % path.name not in index]
    assert not missing, "docs/reference/man-pages.md does not link: " + ", ".join(missing)


# --- The front door, and the links --------------------------------------------------------

def links(path):
    """(line number, target) of every Markdown link and image of the page, code left out."""
    found, fenced = [], False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or line.startswith("    "):
            continue
        line = re.sub(r"`[^`]*`", "", line)
        found += [(number, target) for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line)]
    return found


def slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    text = re.sub(r"(?ms)^```.*?^```", "", path.read_text())
    return {slug(heading) for heading in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_readme_is_a_front_door():
    readme = (REPO / "README.md").read_text()
    count = len(readme.splitlines())
    assert count <= README_MAX_LINES, "README.md has %d lines, more than %d" % (count, README_MAX_LINES)
    outside = [(number, target) for number, target in links(REPO / "README.md")
               if re.match(r"^[a-z][a-z0-9+.-]*:", target)
               or not (REPO / target.split("#")[0]).resolve().is_relative_to(REPO)]
    assert not outside, "README.md links outside the repository: %s" % outside
    for heading in ("Try it without a reader", "Where to go next"):
        assert "\n## %s\n" % heading in readme, heading


def test_the_tutorial_runs_the_readmes_trial():
    """The trial in depth shows the same command lines as the front door (which
    Tests/e2e/test_trial.py runs)."""
    def commands(path):
        return re.findall(r"^    ((?:root#|alice\$) .+)$", path.read_text(), re.M)
    readme, tutorial = commands(REPO / "README.md"), commands(REPO / "docs" / "tutorial" / "trial.md")
    assert len(readme) >= 10, "README.md: the trial's block has %d command lines" % len(readme)
    differ = ["%d: README %r, tutorial %r" % (n, a, b) for n, (a, b) in enumerate(zip(readme, tutorial), 1) if a != b]
    assert not differ and len(readme) == len(tutorial), "docs/tutorial/trial.md's commands are not the README's:\n" \
        + "\n".join(differ or ["README %d lines, tutorial %d" % (len(readme), len(tutorial))])


def test_every_relative_link_reaches_a_file_and_its_heading():
    broken = []
    for page in markdown_pages():
        for number, target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            file, _, fragment = target.partition("#")
            resolved = (page.parent / file).resolve() if file else page
            where = "%s:%d: %s" % (page.relative_to(REPO), number, target)
            if not resolved.is_relative_to(REPO):
                broken.append(where + " (outside the repository)")
            elif not resolved.exists():
                broken.append(where + " (no such file)")
            elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
                broken.append(where + " (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)
