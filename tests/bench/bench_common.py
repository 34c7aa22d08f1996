"""bench_common.py: what every piece of the harness shares: the repository's paths,
log() (seconds since start), sh(), free_port(), a plain HTTP GET, the tools' poll
loop (wait_until, re-exported), and the processes we start (STARTED, stopped by PID
in stop_all()). Standard library only."""
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from waiting import wait_until  # noqa: E402  (the tools' one poll loop)

# wait_until is imported for the other modules (bench_servers re-exports it).
__all__ = ["HERE", "ROOT", "T0", "STARTED", "free_port", "http_get", "http_get_ok", "log", "sh",
           "stop_all", "stop_proc", "wait_until"]

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
T0 = time.monotonic()


def log(msg):
    print(f"[{time.monotonic() - T0:6.1f}s] {msg}", flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


STARTED = []  # Popen objects, stopped by PID in stop_all()


def stop_proc(p, sig=signal.SIGTERM, wait=15.0):
    if p.poll() is not None:
        return p.returncode
    try:
        p.send_signal(sig)
        return p.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait(timeout=5)


def stop_all():
    for p in reversed(STARTED):
        if p.poll() is None:
            stop_proc(p, signal.SIGTERM, 10)


def http_get(host, port, path, timeout=1.0):
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        return data
    except OSError:
        return None


def http_get_ok(host, port, path, timeout=1.0):
    data = http_get(host, port, path, timeout)
    return bool(data) and data.startswith(b"HTTP/1.1 200")
