#!/usr/bin/env python3
"""The operator console as an operator uses it (docs/api.md, Operator console), in headless Chromium.

Starts `postern demo` (the debug build, in front of its Directus stand-in) on free ports with an admin token,
then in the browser: opens the dashboard, gives the token, sees the request count rise after traffic, finds
x@y.com (signed in twice through the API, from two user agents), revokes one session with its button, and
checks through the API that the revoked session's token gets 401 while the other still gets 200. The page
must log no error (a script or style the Content-Security-Policy blocked would), and the token must not be
in a cookie or in storage. Saves a screenshot at 1280x800 to .build/dashboard.png (DASHBOARD_SCREENSHOT
moves it). Every wait polls with a deadline. Needs chromium, chromium-driver (make deps) and Selenium in
.build/venv (scripts/pydeps.sh).
"""
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POSTERN = os.path.join(ROOT, ".build", "debug", "postern")
SCREENSHOT = os.environ.get("DASHBOARD_SCREENSHOT", os.path.join(ROOT, ".build", "dashboard.png"))
ADMIN_TOKEN = "dash-" + secrets.token_hex(16)
AGENTS = ("PosternTest/1.0 (phone; revoked by the test)", "PosternTest/1.0 (laptop; kept)")


def fail(message):
    print(f"check-dashboard: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def call(method, url, body=None, token=None, agent="dashboard-browser-test"):
    """(status, parsed JSON or None) of one HTTP call."""
    headers = {"User-Agent": agent}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, None


def wait_for(what, probe, seconds=20, interval=0.1):
    """The first truthy value of probe() within `seconds`, else the run fails naming `what`."""
    deadline = time.monotonic() + seconds
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = probe()
            if value:
                return value
        except (StaleElementReferenceException, WebDriverException) as error:
            last_error = error
        time.sleep(interval)
    fail(f"timed out waiting for {what}" + (f" (last error: {last_error})" if last_error else ""))


def start_demo(work):
    """`postern demo` on free ports; returns (process, gateway URL, console URL)."""
    env = dict(os.environ, POSTERN_LISTEN="127.0.0.1:0", POSTERN_ADMIN_LISTEN="127.0.0.1:0",
               POSTERN_ADMIN_TOKEN=ADMIN_TOKEN, POSTERN_LOG_LEVEL="warning", POSTERN_WORKERS="2",
               POSTERN_CACHE_TTL_MS="1000")  # the micro-cache on, so that its figure has something to show
    out_path = os.path.join(work, "demo.out")
    out = open(out_path, "w")
    process = subprocess.Popen([POSTERN, "demo", "--standin-port", "0"], cwd=ROOT, env=env, stdout=out,
                               stderr=subprocess.STDOUT)

    def addresses():
        if process.poll() is not None:
            fail(f"postern demo exited with {process.returncode}: {open(out_path).read()}")
        text = open(out_path).read()
        gateway = re.search(r"^postern demo: gateway on (http://[0-9.]+:[0-9]+)", text, re.M)
        console = re.search(r"^postern demo: operator console on (http://[0-9.]+:[0-9]+)/", text, re.M)
        return (gateway.group(1), console.group(1)) if gateway and console else None

    gateway, console = wait_for("postern demo to print its addresses", addresses)
    return process, gateway, console


def login(gateway, agent):
    status, body = call("POST", f"{gateway}/api/v1/user/login", {"email": "x@y.com", "password": "123456"}, agent=agent)
    if status != 200:
        fail(f"login answered {status}: {body}")
    return body["user"]["token"]


def browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        fail("chromium and chromedriver are needed (make deps installs Debian's chromium and chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--window-size=1280,800", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    # The viewport itself at 1280x800 (the window size counts the browser's own frame).
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False})
    return driver


class Traffic(threading.Thread):
    """API requests from a signed-in client until stopped (some 404s among them), counted."""

    def __init__(self, gateway, token):
        super().__init__(daemon=True)
        self.gateway, self.token = gateway, token
        self.sent = 0
        self.error = None
        self.halt = threading.Event()

    def run(self):
        paths = ["/api/v1/books", "/api/v1/posts?limit=2", "/api/v1/books/1", "/api/v1/books", "/api/v1/books/999"]
        while not self.halt.is_set():
            for path in paths:
                status, _ = call("GET", self.gateway + path, token=self.token)
                if status not in (200, 404):
                    self.error = f"GET {path} answered {status}"  # reported by main(): a thread cannot end the run
                    return
                self.sent += 1
            time.sleep(0.02)  # a steady trickle for the charts, not a barrier


def main():
    if not os.access(POSTERN, os.X_OK):
        fail(f"{POSTERN} is missing: run `swift build --product postern` first")
    work = tempfile.mkdtemp(prefix="postern-dashboard-")
    demo = driver = traffic = None
    try:
        demo, gateway, console = start_demo(work)
        print(f"check-dashboard: gateway {gateway}, console {console}")
        driver = browser()

        # The page, then the token.
        driver.get(console + "/")
        if "Postern" not in driver.title:
            fail(f"unexpected page title {driver.title!r}")
        driver.find_element(By.ID, "token").send_keys(ADMIN_TOKEN)
        driver.find_element(By.ID, "unlock-button").click()
        wait_for("the console to open", lambda: not driver.find_element(By.ID, "unlock").is_displayed()
                 and driver.find_element(By.ID, "version").text not in ("", "–"))
        if driver.execute_script("return document.cookie") or driver.execute_script(
                "return localStorage.length + sessionStorage.length"):
            fail("the page stored something (cookie or storage)")

        def total():
            return int(re.sub(r"[^0-9]", "", driver.find_element(By.ID, "total-requests").text) or "0")

        before = total()
        traffic = Traffic(gateway, login(gateway, "dashboard-browser-test/traffic"))
        traffic.start()
        risen = wait_for("the request count to rise after traffic", lambda: total() >= before + 20 and total())
        print(f"check-dashboard: requests since start {before} -> {risen}")

        # Two sessions of x@y.com, from two user agents; both work.
        revoked_token, kept_token = (login(gateway, agent) for agent in AGENTS)
        for token in (revoked_token, kept_token):
            status, _ = call("GET", f"{gateway}/api/v1/user/me", token=token)
            if status != 200:
                fail(f"a fresh session's /user/me answered {status}")

        # Find the user, see both sessions with their user agents.
        driver.find_element(By.ID, "session-query").send_keys("x@y.com")
        driver.find_element(By.CSS_SELECTOR, "#session-search button").click()

        def rows():
            found = driver.find_elements(By.CSS_SELECTOR, "#sessions-body tr")
            agents = [row.find_elements(By.TAG_NAME, "td")[4].get_attribute("title") for row in found]
            return found if all(agent in agents for agent in AGENTS) else None

        found = wait_for("both sessions in the search result", rows)
        for row in found:
            cells = row.find_elements(By.TAG_NAME, "td")
            if not cells[3].text.startswith("127.0.0.1"):
                fail(f"the client IP column shows {cells[3].text!r}")
        # Let the charts hold a line (DASHBOARD_HISTORY_POINTS points of 2 s: more for the picture in docs/).
        points = int(os.environ.get("DASHBOARD_HISTORY_POINTS", "2"))
        wait_for(f"the history to hold {points} points", lambda: driver.execute_script(
            "return fetch('/admin/stats', {headers: {Authorization: 'Bearer ' + arguments[0]}})"
            ".then(r => r.json()).then(s => s.history.points.length)", ADMIN_TOKEN) >= points
            and driver.find_elements(By.CSS_SELECTOR, "#chart-rps path.line-a"), seconds=30 + 2 * points, interval=0.5)
        driver.save_screenshot(SCREENSHOT)
        print(f"check-dashboard: screenshot {SCREENSHOT}")

        # Revoke the phone's session with its button.
        target = next(row for row in found if row.find_elements(By.TAG_NAME, "td")[4].get_attribute("title") == AGENTS[0])
        target_id = target.get_attribute("data-session-id")
        button = target.find_element(By.CSS_SELECTOR, "button.revoke")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", button)
        button.click()
        wait_for("the revocation notice", lambda: "Revoked 1 session" in driver.find_element(By.ID, "notice").text)
        wait_for("the revoked session to leave the list", lambda: target_id not in [
            row.get_attribute("data-session-id") for row in driver.find_elements(By.CSS_SELECTOR, "#sessions-body tr")])

        status, body = call("GET", f"{gateway}/api/v1/user/me", token=revoked_token)
        if status != 401:
            fail(f"the revoked session's token got {status}, not 401: {body}")
        status, _ = call("GET", f"{gateway}/api/v1/user/me", token=kept_token)
        if status != 200:
            fail(f"the other session's token got {status}, not 200")
        print("check-dashboard: revoked session -> 401, the other -> 200")
        if traffic.error:
            fail(traffic.error)

        # Nothing the page did failed or was blocked (the policy reports blocked scripts and styles here).
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        if errors:
            fail(f"the page logged errors: {errors}")
        print("check-dashboard: OK")
    finally:
        if traffic:
            traffic.halt.set()
            traffic.join(timeout=10)
        if driver:
            driver.quit()
        if demo and demo.poll() is None:
            demo.terminate()  # by the PID we started, SIGTERM: the demo exits 0 after its grace period
            try:
                demo.wait(timeout=15)
            except subprocess.TimeoutExpired:
                demo.kill()
                demo.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
