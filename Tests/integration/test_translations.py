"""The module's catalogs (po/de.po, fr.po, es.po) against the template (po/fingerauth.pot):
every text the module shows is translated in each, with the same {placeholders}, and each
catalog builds with `msgfmt --check` (what the build runs). A text added to the template
without its translations fails here, not at a German `sudo`."""

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PO = REPO / "po"
LANGUAGES = ("de", "fr", "es")


def entries(path):
    """{msgid: msgstr} of a .po/.pot file (single-line strings, as these catalogs are written)."""
    found = {}
    for msgid, msgstr in re.findall(r'^msgid "(.*)"\nmsgstr "(.*)"$', path.read_text(encoding="utf-8"), re.M):
        if msgid:
            found[msgid] = msgstr
    return found


def placeholders(text):
    return sorted(re.findall(r"\{[a-z_]+\}", text))


def text_names():
    """The cases of the module's TextName: one text each."""
    source = (REPO / "Sources/FingerAuthLoginDomain/Decisions/PromptTexts.swift").read_text()
    body = source[source.index("enum TextName"):source.index("var english")]
    return re.findall(r"^    case (\w+)", body, re.M)


def test_the_template_has_one_text_for_each_text_name():
    template = entries(PO / "fingerauth.pot")
    names = text_names()
    assert len(names) >= 15, names
    assert len(template) == len(names), (names, sorted(template))
    assert "Fingerprint login not allowed here by the authenticator's policy" in template
    assert any(text.startswith("Touch the reader on {workstation}") for text in template)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_text_is_translated_with_its_placeholders(language):
    template = entries(PO / "fingerauth.pot")
    catalog = entries(PO / ("%s.po" % language))
    missing = sorted(text for text in template if not catalog.get(text))
    assert missing == [], "%s.po lacks translations of: %s" % (language, missing)
    stale = sorted(text for text in catalog if text not in template)
    assert stale == [], "%s.po translates texts the template no longer has: %s" % (language, stale)
    wrong = sorted(text for text in template if placeholders(text) != placeholders(catalog[text]))
    assert wrong == [], "%s.po changes the placeholders of: %s" % (language, wrong)
    # A prompt keeps its trailing space: the typed answer follows it on the same line.
    unspaced = sorted(text for text in template if text.endswith(": ") and not catalog[text].endswith(" "))
    assert unspaced == [], unspaced


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_catalog_builds(language, tmp_path):
    built = subprocess.run(["msgfmt", "--check", "-o", str(tmp_path / "fingerauth.mo"),
                            str(PO / ("%s.po" % language))], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert (tmp_path / "fingerauth.mo").stat().st_size > 1000
