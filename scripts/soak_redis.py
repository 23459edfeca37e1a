#!/usr/bin/env python3
"""Load driver of `make soak-redis` (scripts/soak-redis.sh): several clients against two gateway instances.

Each client registers its own user, then for the duration runs a random mix of logins, lists, Postern
refreshes and logouts, each on a random instance, keeping at most 3 sessions (under sessions.max_per_user).
Its first session is never logged out, so its Directus token expires and is refreshed many times.
A logged-out token is probed on the *other* instance once more than 1 s has passed since its logout: it must
be refused (401). Fails on any 5xx, transport error, live token refused, or revoked token accepted late.
"""
import http.client
import json
import random
import sys
import threading
import time
import uuid
from collections import Counter

PORT_A, PORT_B, SECONDS, CLIENTS = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
PORTS = [PORT_A, PORT_B]
lock = threading.Lock()
counts = Counter()
failures = []
propagation = []  # seconds from a logout's 204 to the other instance's first 401 (a sample)


def note(key, failure=None):
    with lock:
        counts[key] += 1
        if failure:
            failures.append(failure)


class Client:
    def __init__(self):
        self.conns = {}

    def request(self, port, method, path, body=None, token=None):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        for attempt in range(2):
            conn = self.conns.get(port)
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                self.conns[port] = conn
            try:
                conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
                response = conn.getresponse()
                data = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    conn.close()
                    self.conns.pop(port, None)
                return response.status, (json.loads(data) if data else None)
            except (ConnectionError, http.client.HTTPException, OSError) as error:
                conn.close()
                self.conns.pop(port, None)
                # A keep-alive connection the server closed while idle: retry once on a new one.
                if attempt == 1:
                    return -1, str(error)
        return -1, None


def tokens_of(body):
    return body["user"]["token"], body["data"]["refreshToken"]


def run(index, deadline, probes):
    client = Client()
    email = "soak-%d-%s@example.com" % (index, uuid.uuid4().hex[:8])
    password = "soak-password-%d" % index
    status, body = client.request(random.choice(PORTS), "POST", "/api/v1/user", {"email": email, "password": password})
    note("register %d" % status, None if status == 200 else "register: %s %s" % (status, body))
    if status != 200:
        return
    sessions = [tokens_of(body)]
    while time.monotonic() < deadline:
        port = random.choice(PORTS)
        roll = random.random()
        if not sessions or (roll < 0.15 and len(sessions) < 3):
            status, body = client.request(port, "POST", "/api/v1/user/login", {"email": email, "password": password})
            note("login %d" % status, None if status == 200 else "login: %s %s" % (status, body))
            if status == 200:
                sessions.append(tokens_of(body))
        elif roll < 0.65:
            token, _ = random.choice(sessions)
            status, body = client.request(port, "GET", "/api/v1/books?limit=5", token=token)
            note("list %d" % status, None if status == 200 else "list with a live token: %s %s" % (status, body))
        elif roll < 0.82:
            i = random.randrange(len(sessions))
            status, body = client.request(port, "POST", "/api/v1/user/refresh", {"refreshToken": sessions[i][1]})
            note("refresh %d" % status, None if status == 200 else "refresh of a live session: %s %s" % (status, body))
            if status == 200:
                old = sessions[i][0]
                sessions[i] = tokens_of(body)
                with lock:
                    probes.append((time.monotonic(), 1 - PORTS.index(port), old, "rotated"))
        elif len(sessions) > 1:
            # Session 0 is never logged out: it lives the whole run, so its Directus token is refreshed again
            # and again (racing between the instances), and its Postern tokens rotate.
            token, _ = sessions.pop(random.randrange(1, len(sessions)))
            status, body = client.request(port, "POST", "/api/v1/user/logout", token=token)
            note("logout %d" % status, None if status == 204 else "logout: %s %s" % (status, body))
            if status == 204:
                logged_out = time.monotonic()
                with lock:
                    probes.append((logged_out, 1 - PORTS.index(port), token, "logged out"))
                if random.random() < 0.1:
                    # Measured now and then: how soon the other instance refuses it (polling, up to 1.5 s).
                    other = PORTS[1 - PORTS.index(port)]
                    while time.monotonic() - logged_out < 1.5:
                        if client.request(other, "GET", "/api/v1/user/me", token=token)[0] == 401:
                            with lock:
                                propagation.append(time.monotonic() - logged_out)
                            break
        # Probes due: revoked more than 1 s ago, asked on the other instance.
        now = time.monotonic()
        with lock:
            due = [p for p in probes if now - p[0] > 1.0]
            probes[:] = [p for p in probes if now - p[0] <= 1.0]
        for revoked_at, other, token, why in due:
            status, body = client.request(PORTS[other], "GET", "/api/v1/user/me", token=token)
            late = "token %s %.2f s ago accepted by the other instance" % (why, time.monotonic() - revoked_at)
            note("probe %d" % status, None if status == 401 else (late if status == 200 else "probe: %s %s" % (status, body)))
            if status == 200:
                note("late revocations")


def main():
    deadline = time.monotonic() + SECONDS
    probes = []
    threads = [threading.Thread(target=run, args=(i, deadline, probes)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for key in sorted(counts):
        print("  %-22s %d" % (key, counts[key]))
    server_errors = sum(n for k, n in counts.items() if k.split()[-1].isdigit() and int(k.split()[-1]) >= 500)
    transport = sum(n for k, n in counts.items() if k.endswith(" -1"))
    print("soak-redis: %d requests, %d 5xx, %d transport errors, %d late revocations, %d probes" % (
        sum(n for k, n in counts.items() if k != "late revocations"), server_errors, transport,
        counts["late revocations"], sum(n for k, n in counts.items() if k.startswith("probe"))))
    if propagation:
        ordered = sorted(propagation)
        print("soak-redis: logout on one instance -> refused on the other: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d sampled)" % (
            1000 * ordered[len(ordered) // 2], 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
            1000 * ordered[-1], len(ordered)))
    if failures:
        print("soak-redis: FAILED (%d problems); first ones:" % len(failures))
        for failure in failures[:10]:
            print("  " + failure)
        sys.exit(1)
    print("soak-redis: OK")


if __name__ == "__main__":
    main()
