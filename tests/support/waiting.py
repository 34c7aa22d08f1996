"""Bounded waits on a condition, for the Python test and bench tools.

    import sys; sys.path.insert(0, "<repo>/tests/support")  # or PYTHONPATH
    from waiting import wait_until
    if not wait_until(lambda: port_open(p), timeout=10): fail(...)

A tool that waits for what it needs (a port that answers, a process that
appears, a query that shows up in pg_stat_activity) instead of sleeping a
fixed time neither flakes on a slow host nor idles on a fast one. This module
holds the poll interval, the one sleep such waits need.
"""

import time


def wait_until(done, timeout, every=0.05):
    """Calls done() until it returns a true value, which is returned; None
    when `timeout` seconds pass first (done() is called once more at the
    deadline). Pauses `every` seconds between calls."""
    deadline = time.monotonic() + timeout
    while True:
        got = done()
        if got:
            return got
        now = time.monotonic()
        if now >= deadline:
            return None
        # The poll interval: what the tools wait on (another process's
        # answer, /proc, a server's catalog) offers nothing to block on.
        time.sleep(min(every, deadline - now))
