#!/usr/bin/env python3
"""A slow FastCGI client: cgi-fcgi cannot pause mid-request, this can.

Usage: slow_fcgi_client.py SOCKET PAUSE_MS

On one connection: FCGI_GET_VALUES (a management record, answered at once),
BEGIN_REQUEST and the first half of PARAMS; then a pause (prefork parks the
connection with the master's head guard); then the rest of PARAMS, the empty
PARAMS and an empty STDIN. Prints what came back, one `key=value` per line:
get_values_results (how many FCGI_GET_VALUES_RESULT records: exactly one is
right, a connection handed between processes must not answer twice), status,
body and end_requests. Bounded: 10 s socket timeout.
"""
import socket
import struct
import sys
import time

VERSION = 1
BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT = 1, 3, 4, 5, 6
GET_VALUES, GET_VALUES_RESULT = 9, 10


def record(rtype, request_id, content):
    return struct.pack("!BBHHBx", VERSION, rtype, request_id, len(content),
                       0) + content


def pair(name, value):
    # Names and values here are all shorter than 128 bytes: 1-byte lengths.
    return bytes([len(name), len(value)]) + name + value


def main():
    path, pause_ms = sys.argv[1], int(sys.argv[2])
    params = b"".join([
        pair(b"REQUEST_METHOD", b"GET"),
        pair(b"REQUEST_URI", b"/hello"),
        pair(b"SERVER_PROTOCOL", b"HTTP/1.1"),
        pair(b"HTTP_X_SLOW", b"yes"),
    ])
    half = len(params) // 2
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    s.sendall(
        record(GET_VALUES, 0, pair(b"FCGI_MPXS_CONNS", b"")) +
        record(BEGIN_REQUEST, 1, struct.pack("!HB5x", 1, 0)) +
        record(PARAMS, 1, params[:half]))
    # The pause is the client's shape under test (a slow sender), not a wait
    # for the server.
    time.sleep(pause_ms / 1000.0)
    s.sendall(
        record(PARAMS, 1, params[half:]) + record(PARAMS, 1, b"") +
        record(STDIN, 1, b""))
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    counts, stdout = {}, b""
    while len(data) >= 8:
        _, rtype, _, length, padding = struct.unpack("!BBHHB", data[:7])
        content = data[8:8 + length]
        data = data[8 + length + padding:]
        counts[rtype] = counts.get(rtype, 0) + 1
        if rtype == STDOUT:
            stdout += content
    head, _, body = stdout.partition(b"\r\n\r\n")
    status = b""
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"status:"):
            status = line.split(b":", 1)[1].strip().split(b" ")[0]
    print("get_values_results=%d" % counts.get(GET_VALUES_RESULT, 0))
    print("status=%s" % status.decode())
    print("body=%s" % body.decode(errors="replace").strip())
    print("end_requests=%d" % counts.get(END_REQUEST, 0))


if __name__ == "__main__":
    main()
