#!/usr/bin/env python3
# docs-browser-check.py — the course's pages (make docs) as a reader's browser shows them:
# headless Chromium opens the index and lesson 1's page at 1280 px, and lesson 1's page at
# phone width, over the DevTools protocol on a pipe (no websocket, no packages). It fails
# on a console error or a resource that does not load, when the visible text lacks the
# page's title, when the phone view scrolls sideways, or when the wide view does not put
# prose beside code. It saves a screenshot of each view in the docs folder.
#
#   docs-browser-check.py DOCS_DIR      (DOCS_REQUIRE_BROWSER=1: fail without chromium)
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# (page, width, height, screenshot, the text the page must show)
VIEWS = [("index.html", 1280, 900, "screenshot-index.png", "Fibers from scratch"),
         ("lesson1.html", 1280, 900, "screenshot-lesson1.png", "Lesson 1"),
         ("lesson1.html", 400, 860, "screenshot-lesson1-phone.png", "Lesson 1")]
# The third annotated file (lesson 1's switch_context.S), scrolled into view for the
# screenshot, and how many columns its rows have.
LAYOUT = """(() => {
  const file = document.querySelectorAll('section.file')[2] || document.querySelector('section.file');
  const row = file && file.querySelector('.row');
  if (row && %s) { file.scrollIntoView(); window.scrollBy(0, -50); }
  const wide = [...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1)
                 .slice(0, 3).map(e => e.tagName + '.' + e.className + ': ' + e.textContent.slice(0, 40));
  return JSON.stringify({text: document.body.innerText, wide: wide,
                         scroll: document.documentElement.scrollWidth,
                         columns: row ? getComputedStyle(row).gridTemplateColumns.split(' ').length : 0});
})()"""


class Browser:
    """Chromium with --remote-debugging-pipe: JSON messages ending in NUL, on fds 3 and 4."""

    def __init__(self, executable, profile):
        to_browser, self.commands = os.pipe()
        self.replies, from_browser = os.pipe()
        # The child moves its ends to fds 3 and 4 before the unlisted fds are closed.
        self.process = subprocess.Popen(
            [executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--hide-scrollbars", "--remote-debugging-pipe", "--user-data-dir=" + profile, "about:blank"],
            pass_fds=sorted({3, 4, to_browser, from_browser}), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=lambda: (os.dup2(to_browser, 3), os.dup2(from_browser, 4)), start_new_session=True)
        os.close(to_browser)
        os.close(from_browser)
        self.buffer, self.next_id, self.events = b"", 0, []

    def receive(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.replies, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, session=None, **params):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.receive()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method, session):
        while True:
            event = next((e for e in self.events if e.get("method") == method and e.get("sessionId") == session), None)
            if event:
                self.events.remove(event)
                return event
            self.events.append(self.receive())

    # Chromium's helpers (renderer, GPU, crash handler) are processes of their own that go on
    # writing to the profile folder after the browser dies: ask the browser to close, then
    # end the whole process group, and only then may the folder be removed.
    def close(self):
        try:
            self.call("Browser.close")
            self.process.wait(timeout=10)
        except (OSError, RuntimeError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()


def problems_of(events, session):
    found = []
    for event in (e for e in events if e.get("sessionId") == session):
        params = event.get("params", {})
        if event.get("method") == "Runtime.exceptionThrown":
            found.append("exception: " + params["exceptionDetails"].get("text", ""))
        elif event.get("method") == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append("console.%s: %s" % (params["type"], [a.get("value") for a in params.get("args", [])]))
        elif event.get("method") == "Log.entryAdded" and params["entry"]["level"] == "error":
            found.append("%s: %s" % (params["entry"].get("url", ""), params["entry"]["text"]))
    return found


def view(browser, docs, page, width, height, screenshot, title):
    target = browser.call("Target.createTarget", url="about:blank")["targetId"]
    session = browser.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
        browser.call(domain, session)
    browser.call("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                 deviceScaleFactor=1, mobile=width < 600)
    browser.call("Page.navigate", session, url="file://" + os.path.abspath(os.path.join(docs, page)))
    browser.wait_for("Page.loadEventFired", session)
    layout = json.loads(browser.call("Runtime.evaluate", session, returnByValue=True,
                                     expression=LAYOUT % ("true" if page != "index.html" else "false"))["result"]["value"])
    problems = problems_of(browser.events, session)
    if title not in layout["text"]:
        problems.append("the visible text lacks %r" % title)
    if layout["scroll"] > width + 1:
        problems.append("the page is %d px wide in a %d px window: it scrolls sideways (%s)"
                        % (layout["scroll"], width, "; ".join(layout["wide"])))
    if page != "index.html" and layout["columns"] != (2 if width >= 1000 else 1):
        problems.append("the annotated rows have %d columns at %d px" % (layout["columns"], width))
    shot = browser.call("Page.captureScreenshot", session, format="png")["data"]
    with open(os.path.join(docs, screenshot), "wb") as png:
        png.write(base64.b64decode(shot))
    browser.call("Target.closeTarget", targetId=target)
    return ["%s at %d px: %s" % (page, width, p) for p in problems]


def main():
    docs = sys.argv[1]
    executable = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if executable is None:
        if os.environ.get("DOCS_REQUIRE_BROWSER") == "1":
            print("docs-browser-check: no chromium, and DOCS_REQUIRE_BROWSER=1 (apt-get install chromium)")
            return 1
        print("docs-browser-check: skipped: no chromium here (apt-get install chromium to render the pages)")
        return 0
    signal.signal(signal.SIGALRM, lambda *_: sys.exit("docs-browser-check: chromium did not answer in 90 s"))
    signal.alarm(90)
    with tempfile.TemporaryDirectory(prefix="docs-browser-", ignore_cleanup_errors=True) as profile:
        browser = Browser(executable, profile)
        try:
            problems = sum((view(browser, docs, *v) for v in VIEWS), [])
        finally:
            browser.close()
    for problem in problems:
        print("docs-browser-check: " + problem)
    print("docs-browser-check: %d views in %s; %s; screenshots: %s"
          % (len(VIEWS), os.path.basename(executable), "%d problems" % len(problems) if problems else "no console "
             "errors, titles shown, columns as wide", ", ".join(os.path.join(docs, v[3]) for v in VIEWS)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
