#!/usr/bin/env python3
"""A client still sending after its bad request was answered (lingering close).

Usage: late_stdin_fcgi.py SOCKET

Sends BEGIN_REQUEST and PARAMS for a POST whose CONTENT_LENGTH does not fit in
64 bits, and no STDIN yet. gearboxd answers 400 at once. The client reads the
answer to end of file, then sends its STDIN records, as cgi-fcgi does when it
is slower than the answer. A server that closed on the answer makes that write
fail (EPIPE: the socket is gone), and cgi-fcgi then exits without printing the
answer it had; one that lingers has shut only its write side and drops the
late bytes. Prints status=..., late_write=ok|<error>, then_eof=yes|<error>.
Exit 0 only if the answer was 400, the late write went through and the server
closed cleanly after it. Bounded: 15 s socket timeout.
"""
import socket
import struct
import sys

VERSION = 1
BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT = 1, 3, 4, 5, 6


def record(rtype, content):
    return struct.pack("!BBHHBx", VERSION, rtype, 1, len(content), 0) + content


def pair(name, value):
    return bytes([len(name), len(value)]) + name + value


def read_to_eof(s):
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk


def status_of(data):
    stdout = b""
    while len(data) >= 8:
        _, rtype, _, length, padding = struct.unpack("!BBHHB", data[:7])
        if rtype == STDOUT:
            stdout += data[8:8 + length]
        data = data[8 + length + padding:]
    for line in stdout.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"status:"):
            return line.split(b":", 1)[1].strip().split(b" ")[0].decode()
    return ""


def main():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(15)
    s.connect(sys.argv[1])
    params = b"".join([
        pair(b"REQUEST_METHOD", b"POST"),
        pair(b"REQUEST_URI", b"/echo"),
        pair(b"CONTENT_LENGTH", b"99999999999999999999999"),
    ])
    s.sendall(
        record(BEGIN_REQUEST, struct.pack("!HB5x", 1, 0)) +
        record(PARAMS, params) + record(PARAMS, b""))
    status = status_of(read_to_eof(s))
    print("status=%s" % status)
    try:
        s.sendall(record(STDIN, b"hello") + record(STDIN, b""))
        late = "ok"
    except OSError as e:
        late = type(e).__name__
    print("late_write=%s" % late)
    try:
        then_eof = "yes" if read_to_eof(s) == b"" else "bytes"
    except OSError as e:
        then_eof = type(e).__name__
    print("then_eof=%s" % then_eof)
    s.close()
    sys.exit(0 if (status, late, then_eof) == ("400", "ok", "yes") else 1)


if __name__ == "__main__":
    main()
