"""The admin console as a browser without a browser would use it: one HTTPS client with a
cookie jar against fingerauthd's `admin-listen` port (test CA), no redirects followed, and
the admin account made the way an admin makes it (`fingerauthd admin create`, then the
one-time setup link). Browser tests drive the same pages through headless Chromium."""

import html
import http.client
import re
import subprocess
import urllib.parse

PASSWORD = "correct horse battery staple"


class Page:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        self.text = body.decode("utf-8", "replace")

    def field(self, name):
        """The value of the hidden input `name` of the page's first form that has one."""
        match = re.search(r'<input type="hidden" name="%s" value="([^"]*)"' % re.escape(name), self.text)
        return html.unescape(match.group(1)) if match else None

    def element_text(self, element_id):
        """The text inside the element with `id` (tags removed)."""
        match = re.search(r'id="%s"[^>]*>(.*?)</' % re.escape(element_id), self.text, re.S)
        return html.unescape(re.sub(r"<[^>]+>", "", match.group(1))) if match else None

    def table_rows(self, table_id):
        """The rows of the table with `table_id`, each a list of cell texts (tags removed)."""
        match = re.search(r'<table id="%s">.*?<tbody>(.*?)</tbody>' % re.escape(table_id), self.text, re.S)
        if not match:
            return None
        return [[html.unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]
                for row in re.findall(r"<tr(?: [^>]*)?>(.*?)</tr>", match.group(1), re.S)]

    def __repr__(self):
        return "Page(%d, %r)" % (self.status, self.text[:300])


class ConsoleClient:
    def __init__(self, authd, port=None):
        self.authd = authd
        self.port = port or authd.console_port
        self.cookies = {}

    def request(self, method, path, form=None, headers=None, cookies=True):
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10, context=self.authd.tls.ssl_context())
        try:
            sent = dict(headers or {})
            body = None
            if form is not None:
                body = urllib.parse.urlencode(form).encode("ascii")
                sent["Content-Type"] = "application/x-www-form-urlencoded"
            if cookies and self.cookies:
                sent["Cookie"] = "; ".join("%s=%s" % item for item in self.cookies.items())
            connection.request(method, path, body=body, headers=sent)
            answer = connection.getresponse()
            page = Page(answer.status, answer.getheaders(), answer.read())
        finally:
            connection.close()
        for name, value in page.headers:
            if name.lower() == "set-cookie":
                cookie = value.split(";", 1)[0]
                key, _, val = cookie.partition("=")
                if "Max-Age=0" in value:
                    self.cookies.pop(key, None)
                else:
                    self.cookies[key] = val
        return page

    def header(self, page, name):
        return [v for k, v in page.headers if k.lower() == name.lower()]

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, form):
        return self.request("POST", path, form=form)

    def sign_in(self, name, password=PASSWORD):
        form = self.get("/signin")
        assert form.status == 200, form
        return self.post("/signin", {"csrf": form.field("csrf"), "name": name, "password": password})

    def csrf(self, path="/overview"):
        return self.get(path).field("csrf")


def create_admin(authd, name, password=PASSWORD):
    """`fingerauthd admin create NAME`, then the setup link's form: the account is ready."""
    done = subprocess.run([authd.binary, "admin", "create", name, "--db", authd.db, "--console-url", authd.console_url],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    link = done.stdout.splitlines()[-1]
    assert link.startswith(authd.console_url + "/setup?token="), done.stdout
    if password is None:
        return link
    client = ConsoleClient(authd)
    path = link[len(authd.console_url):]
    token = urllib.parse.parse_qs(urllib.parse.urlparse(path).query)["token"][0]
    page = client.get(path)
    assert page.status == 200 and page.field("token") == token, page
    done = client.post("/setup", {"token": token, "password": password, "again": password})
    assert done.status == 303 and client.header(done, "Location") == ["/signin?done=1"], done
    return link
