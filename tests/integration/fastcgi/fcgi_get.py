#!/usr/bin/env python3
"""One FastCGI GET on its own connection, with a request id of our choosing.

Usage: fcgi_get.py SOCKET URI REQUEST_ID

Sends BEGIN_REQUEST (no FCGI_KEEP_CONN), the PARAMS, an empty STDIN; reads
until the server closes. Prints, one `key=value` per line: status, body,
records (the record types in order, e.g. 6,6,3: STDOUT, STDOUT, END_REQUEST),
ids (the request ids the records carried, deduplicated) and end_status (the
END_REQUEST's protocolStatus, -1 without one). Bounded: 15 s socket timeout.
"""
import socket
import struct
import sys

VERSION = 1
BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT = 1, 3, 4, 5, 6


def record(rtype, request_id, content):
    return struct.pack("!BBHHBx", VERSION, rtype, request_id, len(content),
                       0) + content


def pair(name, value):
    return bytes([len(name), len(value)]) + name + value


def main():
    path, uri, rid = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
    params = b"".join([
        pair(b"REQUEST_METHOD", b"GET"),
        pair(b"REQUEST_URI", uri),
        pair(b"QUERY_STRING", uri.partition(b"?")[2]),
        pair(b"SERVER_PROTOCOL", b"HTTP/1.1"),
    ])
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(15)
    s.connect(path)
    s.sendall(
        record(BEGIN_REQUEST, rid, struct.pack("!HB5x", 1, 0)) +
        record(PARAMS, rid, params) + record(PARAMS, rid, b"") +
        record(STDIN, rid, b""))
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    types, ids, stdout, end_status = [], set(), b"", -1
    while len(data) >= 8:
        _, rtype, request_id, length, padding = struct.unpack(
            "!BBHHB", data[:7])
        content = data[8:8 + length]
        data = data[8 + length + padding:]
        types.append(str(rtype))
        ids.add(request_id)
        if rtype == STDOUT:
            stdout += content
        if rtype == END_REQUEST and len(content) >= 5:
            end_status = content[4]
    head, _, body = stdout.partition(b"\r\n\r\n")
    status = b""
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"status:"):
            status = line.split(b":", 1)[1].strip().split(b" ")[0]
    print("status=%s" % status.decode())
    print("body=%s" % body.decode(errors="replace").strip())
    print("records=%s" % ",".join(types))
    print("ids=%s" % ",".join(str(i) for i in sorted(ids)))
    print("end_status=%d" % end_status)


if __name__ == "__main__":
    main()
