#!/usr/bin/env python3
"""Writes the conformance cases into the fuzzers' seed corpora.

  tests/conformance/write_corpus.py

tests/fuzz/corpus/http/conf_<id>: the bytes of each case of cases.toml.
tests/fuzz/corpus/fastcgi/conf_<name>: one FastCGI request (BEGIN_REQUEST with
FCGI_KEEP_CONN, PARAMS, STDIN) for each HTTP question that PARAMS can raise
(the cases of HttpQuestionsThroughParamsGetHttpAnswers in
tests/unit/fastcgi/fastcgi_http_questions_test.cc).

Run it after adding cases and commit the files; stale conf_* seeds of removed
cases are deleted.
"""

import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from nginx_verdicts import load_cases  # noqa: E402

CORPUS = os.path.join(HERE, "..", "fuzz", "corpus")


def record(rtype, rid, content):
    pad = (8 - len(content) % 8) % 8
    return struct.pack(">BBHHBB", 1, rtype, rid, len(content), pad, 0) + content + b"\0" * pad


def pair(name, value):
    def length(n):
        return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)
    return length(len(name)) + length(len(value)) + name + value


def fastcgi_request(params, body=b""):
    stream = b"".join(pair(n.encode(), v) for n, v in params)
    out = record(1, 1, struct.pack(">HB5x", 1, 1))  # responder, keep-conn
    out += record(4, 1, stream) + record(4, 1, b"")
    if body:
        out += record(5, 1, body)
    return out + record(5, 1, b"")


def base(method=b"GET", uri=b"/hello", **extra):
    params = [("REQUEST_METHOD", method), ("REQUEST_URI", uri),
              ("SERVER_PROTOCOL", b"HTTP/1.1"), ("CONTENT_TYPE", b""),
              ("CONTENT_LENGTH", b"")]
    for name, value in extra.items():
        params = [(n, v) for n, v in params if n != name] + [(name, value)]
    return params


FASTCGI = {
    "cl_not_a_number": (base(b"POST", b"/echo", CONTENT_LENGTH=b"0x5"), b"hello"),
    "cl_plus_sign": (base(b"POST", b"/echo", CONTENT_LENGTH=b"+5"), b"hello"),
    "cl_overflow": (base(b"POST", b"/echo",
                         CONTENT_LENGTH=b"99999999999999999999999"), b""),
    "cl_dup": (base(b"POST", b"/echo", CONTENT_LENGTH=b"5")
               + [("CONTENT_LENGTH", b"5")], b"hello"),
    "stdin_longer": (base(b"POST", b"/echo", CONTENT_LENGTH=b"4"), b"hello"),
    "stdin_shorter": (base(b"POST", b"/echo", CONTENT_LENGTH=b"6"), b"hello"),
    "stdin_exact": (base(b"POST", b"/echo", CONTENT_LENGTH=b"5"), b"hello"),
    "host_dup": (base(HTTP_HOST=b"t") + [("HTTP_HOST", b"u")], b""),
    "host_invalid": (base(HTTP_HOST=b"a b"), b""),
    "host_userinfo": (base(HTTP_HOST=b"user@t"), b""),
    "value_nul": (base(HTTP_X_A=b"a\0b"), b""),
    "value_ctl": (base(HTTP_X_A=b"a\x01b"), b""),
    "method_not_token": (base(b"G@T"), b""),
    "method_unknown": (base(b"FROB"), b""),
    "method_connect": (base(b"CONNECT", b"t:443"), b""),
    "uri_fragment": (base(uri=b"/hello#frag"), b""),
    "uri_asterisk_get": (base(uri=b"*"), b""),
    "uri_asterisk_options": (base(b"OPTIONS", b"*"), b""),
    "uri_absolute": (base(uri=b"http://other.example:81/hello?x=1",
                          HTTP_HOST=b"t"), b""),
    "uri_absolute_no_path": (base(uri=b"https://h.example?x=1"), b""),
}


def write(directory, name, data, written):
    path = os.path.join(directory, "conf_" + name)
    written.add(os.path.basename(path))
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return
    except FileNotFoundError:
        pass
    with open(path, "wb") as f:
        f.write(data)


def prune(directory, written):
    for name in os.listdir(directory):
        if name.startswith("conf_") and name not in written:
            os.remove(os.path.join(directory, name))


def main():
    _, cases = load_cases()
    http_dir = os.path.join(CORPUS, "http")
    written = set()
    for case in cases:
        write(http_dir, case["id"], case["bytes"], written)
    prune(http_dir, written)
    fcgi_dir = os.path.join(CORPUS, "fastcgi")
    written_fcgi = set()
    for name, (params, body) in FASTCGI.items():
        write(fcgi_dir, name, fastcgi_request(params, body), written_fcgi)
    prune(fcgi_dir, written_fcgi)
    print(f"write_corpus: {len(written)} HTTP seeds, {len(written_fcgi)} FastCGI seeds")


if __name__ == "__main__":
    main()
