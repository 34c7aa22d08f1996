#!/usr/bin/env python3
"""Counts the fixed sleeps in tests/: every call that pauses for a set time.

    tests/tools/count_sleeps.py            # every call site, then the totals
    tests/tools/count_sleeps.py --max 25   # exit 1 past 25, or on a site
                                           # with no comment saying why

A test that sleeps "to let it settle" races the clock: it flakes on a slow
host and idles on a fast one. A test waits on an observable condition instead
(tests/support: wait_until.cc, lib.sh's wait_until, waiting.py), and those
helpers hold the poll intervals, one sleep each. What is left is a pace or a
window that is itself the thing under test, and says so in a comment on the
line or within the 2 lines above.

Counted (code only: comment lines and Markdown are skipped):
  C/C++    sleep_for( sleep_until( usleep( nanosleep( sleep(
  shell    a `sleep N` command, wherever it stands (after ;, &&, do, then,
           timeout S, at the start of a line)
  Python   time.sleep( and a bare sleep( (from time import sleep)
  Lua      any X.sleep( other than gearbox.sleep(
Listed apart, not counted: gearbox.sleep( in Lua (test scripts, heredocs in
the shell tests, bench scripts), gearbox's own wait API as the feature under
test, not a pause of the test's own.
Not looked at: tests/bench/results, tests/bench/out, tests/fuzz/out and the
fuzz corpora (tests/fuzz/corpus, tests/fuzz/regressions): data, not code.
Stdlib only.
"""

import argparse
import os
import re
import sys

SKIP_DIRS = ("bench/results", "bench/out", "fuzz/out", "fuzz/corpus",
             "fuzz/regressions")
SKIP_SUFFIXES = (".md", ".json", ".png", ".dat", ".gp", ".svg", ".txt",
                 ".toml", ".supp", ".yml", ".csv")

C_SUFFIXES = (".cc", ".h", ".c", ".cpp", ".hpp")

# What counts, by kind. Each pattern is searched in a line's code (its
# comment cut off).
C_CALL = re.compile(
    r"\b(?:sleep_for|sleep_until|usleep|nanosleep)\s*\(|(?<![\w.>])(?:::)?sleep\s*\(")
PY_CALL = re.compile(r"\btime\.sleep\s*\(|(?<![\w.])sleep\s*\(")
# A shell command `sleep ARG`: at a line's start or after a separator, a
# keyword that starts a command, or `timeout DURATION`.
SH_CALL = re.compile(
    r"(?:^|[;&|(){}`]|\b(?:then|do|else|exec)\b|\btimeout\s+(?:-\S+\s+)*\S+)"
    r"\s*sleep\s+[\d\"'$.]")
LUA_CALL = re.compile(r"(?<!gearbox)\.sleep\s*\(")
FEATURE = re.compile(r"\bgearbox\.sleep\s*\(")

TRIPLE = '"' * 3
# A string literal in one line (a rough cut: no raw or triple-quoted strings).
STRING = re.compile(r'"(?:[^"\\]|\\.)*"' "|" r"'(?:[^'\\]|\\.)*'")
COMMENT_START = re.compile(r"^\s*(//|#|--|/\*|\*)")


def code_of(line, c_like):
    """The line without its comment (a rough cut: good enough for tests)."""
    if c_like:
        return line.split("//", 1)[0]
    # A shell/Python '#' starts a comment at the line's start or after a
    # space; `$#` and "x#y" are not comments.
    return re.split(r"(?:^|\s)#", line, maxsplit=1)[0]


def has_comment(lines, i, c_like):
    """True when line i has a comment of its own or one within 2 lines above."""
    if code_of(lines[i], c_like) != lines[i] or re.search(r"\s--\s", lines[i]):
        return True
    return any(COMMENT_START.match(lines[j]) for j in range(max(0, i - 2), i))


def scan(path, rel):
    """Yields (line number, kind, text, commented) for each sleep call (a
    line with two calls yields two)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except (UnicodeDecodeError, OSError):
        return
    c_like = rel.endswith(C_SUFFIXES)
    is_py, is_lua = rel.endswith(".py"), rel.endswith(".lua")
    in_block = in_doc = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if is_py:
            # A triple-quoted string is prose or data (a docstring, a config
            # it writes), and so is the line that opens or closes one.
            quotes = stripped.count(TRIPLE)
            if quotes % 2 == 1:
                in_doc = not in_doc
                continue
            if in_doc or stripped.startswith(TRIPLE):
                continue
        if c_like:
            if in_block:
                in_block = "*/" not in stripped
                continue
            if stripped.startswith("/*"):
                in_block = "*/" not in stripped
                continue
        if COMMENT_START.match(line) and not stripped.startswith("*)"):
            continue
        code = code_of(line, c_like)
        kinds = ["gearbox.sleep"] * len(FEATURE.findall(code))
        if is_lua:
            kinds += ["lua"] * len(LUA_CALL.findall(code.split("--", 1)[0]))
        elif c_like:
            kinds += ["c"] * len(C_CALL.findall(STRING.sub('""', code)))
        else:
            # A Python file's string literals are text (a message, a Lua
            # script it writes); a shell file's may be code (python3 -c).
            py_code = STRING.sub('""', code) if is_py else code
            kinds += ["python"] * len(PY_CALL.findall(py_code))
            if not is_py:
                kinds += ["shell"] * len(SH_CALL.findall(code))
        for kind in kinds:
            yield i + 1, kind, stripped, has_comment(lines, i, c_like)


def walk(tests):
    for dirpath, dirnames, filenames in os.walk(tests):
        rel_dir = os.path.relpath(dirpath, tests)
        dirnames[:] = sorted(
            d for d in dirnames
            if os.path.normpath(os.path.join(rel_dir, d)) not in SKIP_DIRS)
        for name in sorted(filenames):
            if (name.endswith(SKIP_SUFFIXES) or name == "README" or
                    name == os.path.basename(__file__)):
                continue
            path = os.path.join(dirpath, name)
            yield path, os.path.relpath(path, os.path.dirname(tests))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tests", default=os.path.dirname(here),
                        help="the tests/ directory (default: this file's)")
    parser.add_argument("--max", type=int, default=None,
                        help="exit 1 when more sleeps than this, or any "
                        "without a comment")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="only the totals (and the sites at fault)")
    args = parser.parse_args()
    tests = os.path.abspath(args.tests)

    counted, features = [], []
    for path, rel in walk(tests):
        for line, kind, text, commented in scan(path, rel):
            site = (f"{rel}:{line}", kind, text, commented)
            (features if kind == "gearbox.sleep" else counted).append(site)

    uncommented = [s for s in counted if not s[3]]
    over = args.max is not None and len(counted) > args.max
    for where, kind, text, commented in counted:
        if args.quiet and (commented or args.max is None):
            continue
        mark = "commented" if commented else "NO COMMENT"
        print(f"{where}: {kind}: {mark}: {text}")
    if features and not args.quiet:
        print()
        print("gearbox.sleep( calls: gearbox's own wait API as the feature "
              "under test (not counted):")
        for where, _, text, _ in features:
            print(f"  {where}: {text}")
    by_kind = {}
    for _, kind, _, _ in counted:
        by_kind[kind] = by_kind.get(kind, 0) + 1
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items()))
    print()
    print(f"sleep calls in tests/: {len(counted)} ({kinds or 'none'}); "
          f"{len(uncommented)} without a comment saying why; "
          f"gearbox.sleep (feature under test, not counted): {len(features)}")
    if args.max is None:
        return 0
    if over:
        print(f"count_sleeps: FAIL: {len(counted)} sleep calls, at most "
              f"{args.max} allowed: wait on a condition (tests/support)")
    if uncommented:
        print(f"count_sleeps: FAIL: {len(uncommented)} sleep calls without a "
              "comment (on the line or within the 2 lines above) saying why "
              "it cannot be a wait on a condition")
    return 1 if over or uncommented else 0


if __name__ == "__main__":
    sys.exit(main())
