"""The module's texts in the user's language: real sudo under LANG=de_DE.UTF-8 shows the
German texts from the catalog built from po/de.po (gettext in the module; French and
Spanish too), and a
`text.place_finger` line in the configuration replaces it. de_DE.UTF-8 is generated for
these tests when the machine lacks it (localedef) and deleted again afterwards."""

import subprocess

import pytest

from machine import PamService, SudoersDropIn
from terminal import Terminal

GERMAN_PLACE = "Legen Sie Ihren Finger auf den Fingerabdruckleser"
GERMAN_PROMPT = "Passwort oder Finger auflegen:"
GERMAN_ENV = {"LANG": "de_DE.UTF-8"}


def have_locale(name):
    listed = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.split()
    return name in listed


LOCALES = ("de_DE", "fr_FR", "es_ES")
PLACE = {"de_DE": GERMAN_PLACE, "fr_FR": "Posez votre doigt sur le lecteur d'empreintes",
         "es_ES": "Coloque el dedo en el lector de huellas"}


@pytest.fixture(scope="module")
def languages():
    """de_DE, fr_FR and es_ES (UTF-8) on this machine for the duration of these tests (a
    machine change, undone: only the ones this fixture generated are deleted)."""
    created = []
    try:
        for name in LOCALES:
            if not have_locale(name + ".utf8"):
                done = subprocess.run(["localedef", "-i", name, "-f", "UTF-8", name + ".UTF-8"], capture_output=True,
                                      text=True, timeout=120)
                if done.returncode != 0 or not have_locale(name + ".utf8"):
                    pytest.fail("cannot generate %s.UTF-8: %s" % (name, done.stderr))
                created.append(name)
        yield
    finally:
        for name in created:
            subprocess.run(["localedef", "--delete-from-archive", name + ".utf8"], capture_output=True, timeout=60)
            assert not have_locale(name + ".utf8")


@pytest.fixture
def stack(install, user, languages):
    def make(*args):
        service = PamService("fa-e2e-lang-" + user.name.split("-")[-1], [
            "#%PAM-1.0",
            install.module_line("locale_dir=%s" % (install.build / "locale"), *args),
            "auth     required  pam_unix.so",
            "account  required  pam_unix.so",
            "session  required  pam_permit.so",
        ])
        made.append(service)
        made.append(SudoersDropIn(user, service.name))
        install.enroll(user, "finger-right")
        return service
    made = []
    try:
        yield install, user, make
    finally:
        for thing in reversed(made):
            thing.remove()


def test_sudo_in_german_shows_the_german_prompt(stack, observe):
    """LANG=de_DE.UTF-8: sudo shows the module's German text; the finger runs sudo"""
    install, user, make = stack
    make()
    install.feed("finger-right")
    done = user.as_user(["sudo", "-k", "-S", "true"], env=GERMAN_ENV)
    install.fed()
    observe("exit %d; stdout %r" % (done.returncode, done.stdout))
    assert done.returncode == 0, done.stderr
    assert done.stdout == GERMAN_PLACE + "\n"


@pytest.mark.parametrize("name", ["fr_FR", "es_ES"])
def test_sudo_in_french_and_spanish(stack, observe, name):
    """LANG=fr_FR.UTF-8 / es_ES.UTF-8: the French and Spanish catalogs"""
    install, user, make = stack
    make()
    install.feed("finger-right")
    done = user.as_user(["sudo", "-k", "-S", "true"], env={"LANG": name + ".UTF-8"})
    install.fed()
    observe("exit %d; stdout %r" % (done.returncode, done.stdout))
    assert done.returncode == 0
    assert done.stdout == PLACE[name] + "\n"


def test_sudo_in_the_c_locale_stays_english(stack, observe):
    """LANG=C.UTF-8 (the control): the English text"""
    install, user, make = stack
    make()
    install.feed("finger-right")
    done = user.as_user(["sudo", "-k", "-S", "true"])
    install.fed()
    observe("exit %d; stdout %r" % (done.returncode, done.stdout))
    assert done.returncode == 0
    assert done.stdout == "Place your finger on the fingerprint reader\n"


def test_a_text_line_replaces_the_german_prompt_and_names_the_service(stack, observe):
    """text.place_finger = … {service}: replaces the translation, names the service"""
    install, user, make = stack
    service = make()
    with open(install.conf, "a") as f:
        f.write("text.place_finger = Finger auflegen, um {service} zu erlauben\n")
    install.feed("finger-right")
    done = user.as_user(["sudo", "-k", "-S", "true"], env=GERMAN_ENV)
    install.fed()
    observe("exit %d; stdout %r" % (done.returncode, done.stdout))
    assert done.returncode == 0
    assert done.stdout == "Finger auflegen, um %s zu erlauben\n" % service.name


def test_parallel_prompt_in_german_on_a_terminal(stack, observe):
    """prompt=parallel, LANG=de_DE.UTF-8, on a pty: the German one prompt; the finger runs sudo"""
    install, user, make = stack
    make("prompt=parallel")
    install.feed("finger-right")
    term = Terminal(user, ["sudo", "-k", "true"], env=GERMAN_ENV)
    try:
        status = term.finish(timeout=30)
    finally:
        term.close()
    install.fed()
    observe("exit %d; screen %r" % (status, term.screen))
    assert status == 0
    assert term.screen.count(GERMAN_PROMPT) == 1
