"""Headless Chromium driven through Selenium (Debian's chromium, chromium-driver and
python3-selenium), for the admin console's browser tests. HTTPS is trusted by pinning the
test server's public key (`--ignore-certificate-errors-spki-list`): exactly that key, no
other certificate error is waived. Every page it shows can be saved as a screenshot in
`build/artefacts/browser/`. It never leaves a chromium or chromedriver process behind."""

import base64
import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time

from cryptography import x509
from cryptography.hazmat.primitives import serialization

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTEFACTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                         "build", "artefacts", "browser")


def available():
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)


def spki_pin(cert_path):
    """base64 of the SHA-256 of the certificate's SubjectPublicKeyInfo, as Chromium takes it."""
    with open(cert_path, "rb") as f:
        certificate = x509.load_pem_x509_certificate(f.read())
    spki = certificate.public_key().public_bytes(serialization.Encoding.DER,
                                                 serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode("ascii")


class Browser:
    def __init__(self, server_cert, artefacts_dir=ARTEFACTS):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        self.artefacts = artefacts_dir
        os.makedirs(self.artefacts, exist_ok=True)
        self.profile = tempfile.mkdtemp(prefix="fa-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
                     "--no-default-browser-check", "--no-proxy-server", "--window-size=1280,900",
                     "--user-data-dir=" + self.profile,
                     "--ignore-certificate-errors-spki-list=" + spki_pin(server_cert)):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.service = Service(executable_path=CHROMEDRIVER, log_output=subprocess.DEVNULL)
        self.driver = webdriver.Chrome(service=self.service, options=options)
        self.driver.set_page_load_timeout(15)
        self.driver.implicitly_wait(0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def get(self, url):
        self.driver.get(url)

    def find(self, css):
        from selenium.webdriver.common.by import By
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css):
        from selenium.webdriver.common.by import By
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css):
        return self.find(css).text

    def fill(self, css, value):
        element = self.find(css)
        element.clear()
        element.send_keys(value)

    def choose(self, css, text):
        """Picks the option with `text` in the <select> at `css`."""
        from selenium.webdriver.support.ui import Select
        Select(self.find(css)).select_by_visible_text(text)

    def click(self, css):
        """Clicks and waits for the page that the click loads."""
        old = self.find("html")
        self.find(css).click()
        self.wait_until(lambda: self._stale(old))
        self.wait_until(lambda: self.driver.execute_script("return document.readyState") == "complete")

    def _stale(self, element):
        from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
        try:
            element.tag_name
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            # Caught mid-navigation, chromedriver reports the old node this way instead.
            if "does not belong to the document" in str(error):
                return True
            raise

    def wait_until(self, predicate, timeout=10):
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError("the page did not change within %s s" % timeout)
            time.sleep(0.05)

    def path(self):
        from urllib.parse import urlparse
        parsed = urlparse(self.driver.current_url)
        return parsed.path + ("?" + parsed.query if parsed.query else "")

    def cookies(self):
        return {c["name"]: c for c in self.driver.get_cookies()}

    def console_errors(self):
        return [entry for entry in self.driver.get_log("browser") if entry.get("level") == "SEVERE"]

    def screenshot(self, name):
        path = os.path.join(self.artefacts, name + ".png")
        self.driver.save_screenshot(path)
        return path

    def close(self):
        pid = getattr(getattr(self.service, "process", None), "pid", None)
        try:
            self.driver.quit()
        except Exception:
            pass
        if pid is not None:
            try:
                os.killpg(os.getpgid(pid), signal.SIGKILL) if os.getpgid(pid) == pid else os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        shutil.rmtree(self.profile, ignore_errors=True)
