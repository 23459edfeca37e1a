"""Holds N idle keep-alive connections to a gateway and prints what they cost in its resident set (make scale).

Usage: idle_clients.py HOST PORT N TOKEN PID get|silent

get: N connections, each sends one GET /api/v1/books (with TOKEN) and reads its whole answer, then stays open.
     Prints `idle-after-get: <MB>`: the growth of PID's VmRSS from before the first connection.
silent: N connections that never send a byte: `idle-silent: <MB>`.
Connections are opened by 16 threads, so that all N are open well within the gateway's inactivity timeout.
"""
import socket
import sys
import threading
import time

host, port, count, token, pid, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
REQUEST = (f"GET /api/v1/books HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\r\n").encode()


def rss_mb():
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise SystemExit("gateway gone")


def read_answer(sock):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before the head")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the body")
        body += chunk
    return status


def open_all(send):
    socks, statuses, lock = [], {}, threading.Lock()

    def worker(n):
        for _ in range(n):
            s = socket.create_connection((host, port))
            status = 0
            if send:
                s.sendall(REQUEST)
                status = read_answer(s)
            with lock:
                socks.append(s)
                statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=worker, args=(count // 16 + (1 if i < count % 16 else 0),)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return socks, statuses


def still_open(socks):
    """Connections the gateway has not closed (a closed one reads EOF at once)."""
    alive = 0
    for s in socks:
        s.setblocking(False)
        try:
            alive += 0 if s.recv(1) == b"" else 1
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
    return alive


for send, label in [(mode == "get", "idle-after-get" if mode == "get" else "idle-silent")]:
    time.sleep(0.5)
    before = rss_mb()
    started = time.monotonic()
    socks, statuses = open_all(send)
    time.sleep(0.5)
    after = rss_mb()
    alive = still_open(socks)
    print(f"{label}: {after - before:.1f} MB for {len(socks)} connections ({alive} still open after "
          f"{time.monotonic() - started:.1f} s; answers {statuses}); RSS {before:.1f} -> {after:.1f} MB", flush=True)
    for s in socks:
        s.close()
