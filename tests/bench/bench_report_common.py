"""bench_report_common.py: what the report's parts share: the noisy-run threshold,
number formatting (_f, _ratio), a run's route, the plots' routes, and the baseline
run of a held (idle or slow) set. Standard library only."""

# A run during which other processes used more CPU than this (in cores) is flagged.
NOISY_CORES = 0.15


def _f(v, digits=0, unit=""):
    if v is None:
        return "–"
    return f"{v:,.{digits}f}{unit}"


def _ratio(a, b):
    return a / b if a is not None and b else None


def route(r):
    """How the load reached the server: "direct", "ref" (nginx `return 200`),
    "nginx unix" or "nginx tcp" (runs from before the TCP transport: unix)."""
    if r.get("path") == "nginx":
        return f"nginx {r.get('transport') or 'unix'}"
    return r.get("path")


# Plots and their titles per route; "nginx unix" keeps the file name it had
# before the TCP transport existed.
PLOT_ROUTES = (("direct", "direct", "direct to gearboxd"),
               ("nginx unix", "nginx", "through nginx (1 worker) over the unix socket"),
               ("nginx tcp", "nginx-tcp", "through nginx (1 worker) over TCP"))


def _parked(held):
    """The slow table's parked cell: heads the head guard took while only the slow
    clients were connected, plus any wrk connection parked under load."""
    if not held["server"].startswith("prefork"):
        return "–"
    extra = held.get("parked_under_load")
    return f"{held.get('parked', '–')}" + (f" (+{extra} under load)" if extra else "")


def _baseline(runs, held):
    """The wrk run on the same server without the held (idle or slow) connections."""
    return next((r for r in runs if r.get("tag") == f"{held['kind']}-baseline"
                 and r["server"] == held["server"]), None)
