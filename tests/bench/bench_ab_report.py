"""bench_ab_report.py: bench_ab.py's figures and ab.md: per cell, each side's medians
over its rounds and the NEW/OLD ratios; the table, the summary line, the noisy-host
warning and the markdown page. Standard library only."""
import random
import statistics

import bench_report
from bench_plan import CONFIGS

NOISY_CORES = bench_report.NOISY_CORES


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _side_figures(rs):
    rps = [r["rps"] for r in rs]
    med = _median(rps)
    return {"rps": rps, "rps_median": med,
            "spread": (max(rps) - min(rps)) / med if med else None,
            "cpu_us_per_req": _median(r.get("gearboxd_cpu_us_per_req") for r in rs),
            "nginx_cpu_us_per_req": _median(r.get("nginx_cpu_us_per_req") for r in rs),
            "p99_ms": _median(r.get("p99_ms") for r in rs),
            "errors": sum(r["errors"] + r["non2xx"] for r in rs),
            "noisy_runs": sum((r.get("foreign_cpu_cores") or 0) > NOISY_CORES for r in rs),
            "runs": len(rs)}


def _ratio(b, a):
    return b / a if a and b is not None else None


# The interval the ratio of medians would fall in were the cell measured again on
# this host: rounds resampled with replacement, A and B of one round kept together
# (the host's speed moves both). 90%, seeded by the cell's name so a rerender
# prints the same figures.
CI_LEVEL = 0.90
CI_RESAMPLES = 2000


def ratio_interval(a_runs, b_runs, seed):
    by_round = {}
    for side, rs in (("a", a_runs), ("b", b_runs)):
        for r in rs:
            by_round.setdefault(r.get("round"), {})[side] = r["rps"]
    pairs = [(v["a"], v["b"]) for v in by_round.values() if "a" in v and "b" in v and v["a"]]
    if len(pairs) < 3:
        return None
    rng = random.Random(seed)
    ratios = []
    for _ in range(CI_RESAMPLES):
        sample = [rng.choice(pairs) for _ in pairs]
        ratios.append(statistics.median(b for _, b in sample) / statistics.median(a for a, _ in sample))
    ratios.sort()
    tail = (1 - CI_LEVEL) / 2
    return ratios[int(tail * CI_RESAMPLES)], ratios[int((1 - tail) * CI_RESAMPLES) - 1]


def cells(runs, pl):
    out = []
    for label in pl["models"]:
        for w in pl["workloads"]:
            for p in pl["paths"]:
                for c in pl["conns"]:
                    sel = [r for r in runs if r["server"] == label and r["workload"] == w
                           and r["ab_path"] == p and r["conc"] == c]
                    a_runs = [r for r in sel if r["side"] == "a"]
                    b_runs = [r for r in sel if r["side"] == "b"]
                    a, b = _side_figures(a_runs), _side_figures(b_runs)
                    out.append({"model": label, "workload": w, "path": p, "conc": c, "a": a, "b": b,
                                "ratio": _ratio(b["rps_median"], a["rps_median"]),
                                "ratio_ci": ratio_interval(a_runs, b_runs, f"{label} {w} {p} {c}"),
                                "cpu_ratio": _ratio(b["cpu_us_per_req"], a["cpu_us_per_req"]),
                                "p99_ratio": _ratio(b["p99_ms"], a["p99_ms"])})
    return out


def _f(v, digits=0, unit=""):
    return bench_report._f(v, digits, unit)


def table(cs, names, min_ratio):
    """The markdown table, one row per cell."""
    a, b = names
    L = [f"| workload | model | path | c | {a} req/s | {b} req/s | **{b}/{a}** | 90% interval "
         f"| spread {a} / {b} | gearboxd µs/req {a} → {b} (ratio) | p99 ms {a} → {b} | errors {a}/{b} "
         "| noisy runs |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cs:
        mark = " ✗" if c["ratio"] is not None and c["ratio"] < min_ratio else ""
        L.append(f"| {c['workload']} | {c['model']} | {c['path']} | {c['conc']} | {_f(c['a']['rps_median'])} "
                 f"| {_f(c['b']['rps_median'])} | **{_f(c['ratio'], 3)}**{mark} | {_interval(c.get('ratio_ci'))} "
                 f"| {_f(_pct(c['a']['spread']), 1, '%')} / {_f(_pct(c['b']['spread']), 1, '%')} "
                 f"| {_f(c['a']['cpu_us_per_req'], 1)} → {_f(c['b']['cpu_us_per_req'], 1)} "
                 f"({_f(c['cpu_ratio'], 3)}) | {_f(c['a']['p99_ms'], 2)} → {_f(c['b']['p99_ms'], 2)} "
                 f"| {c['a']['errors']}/{c['b']['errors']} "
                 f"| {c['a']['noisy_runs'] + c['b']['noisy_runs']}/{c['a']['runs'] + c['b']['runs']} |")
    return L


def _interval(ci):
    return "–" if not ci else f"{ci[0]:.3f}–{ci[1]:.3f}"


def _pct(v):
    return None if v is None else 100 * v


def _range(values):
    return f"min {min(values):.3f}, median {statistics.median(values):.3f}, max {max(values):.3f}"


def summary(cs, names, min_ratio):
    ratios = [c["ratio"] for c in cs if c["ratio"] is not None]
    if not ratios:
        return "no ratio measured"
    low = [c for c in cs if c["ratio"] is not None and c["ratio"] < min_ratio]
    text = f"{names[1]}/{names[0]} req/s over {len(ratios)} cells: {_range(ratios)}; "
    if low:
        text += f"{len(low)} below {min_ratio}: " + ", ".join(
            f"{c['workload']} {c['model']} {c['path']} c={c['conc']} ({c['ratio']:.3f})" for c in low)
        if any(c.get("ratio_ci") for c in low):  # none with one or two rounds
            clear = [c for c in low if c.get("ratio_ci") and c["ratio_ci"][1] < min_ratio]
            text += (f", {len(clear)} of them with the whole 90% interval below {min_ratio}"
                     + "".join(f" ({c['workload']} {c['model']} {c['path']} c={c['conc']})"
                               for c in clear))
    else:
        text += f"none below {min_ratio}"
    cpu = [c["cpu_ratio"] for c in cs if c["cpu_ratio"] is not None]
    if cpu:
        text += f". gearboxd CPU per request {names[1]}/{names[0]}: {_range(cpu)}"
    return text


def noise_line(runs):
    """A warning when other jobs on the host disturbed many runs, else None."""
    measured = [r for r in runs if r.get("foreign_cpu_cores") is not None]
    noisy = [r for r in measured if r["foreign_cpu_cores"] > NOISY_CORES]
    if len(noisy) <= 0.05 * max(1, len(measured)):
        return None
    worst = max(r["foreign_cpu_cores"] for r in noisy)
    return (f"> **Noisy machine:** other jobs used more than {NOISY_CORES} cores during {len(noisy)} of "
            f"{len(measured)} runs (worst {worst:.2f} cores). req/s ratios are unreliable then; the CPU per "
            "request column moves less. Redo the comparison on a quiet machine (`cat /proc/loadavg` < 1).\n")


def markdown(meta, pl, cs, checks):
    a, b = meta["names"]
    sa, sb = meta["sides"]
    L = [f"# gearboxd A/B: {b} vs {a}\n",
         f"Generated by `tests/bench/run.sh --ab` (`tests/bench/bench_ab.py`). {pl['rounds']} rounds per "
         "configuration; a round starts both sides' gearboxd (and nginx) afresh on ports chosen fresh, from "
         f"identical generated configs, warms both up (1 s of `/hello`{_pg_warmup(pl)}), then runs each "
         "cell for "
         f"{pl['duration']} s with `wrk -t1 --latency --timeout 2s` on {_order(pl)} with the two runs "
         "of a pair seconds apart. Per cell: the "
         "median of each side's rounds; "
         f"**{b}/{a}** is the ratio of the medians of req/s; its *90% interval* is where that ratio falls "
         f"in 90% of {CI_RESAMPLES} resamples of the rounds (both runs of a round kept together), what a "
         "run like this one could read on this host. *spread* = (max − min) / median of a side's "
         "rounds. CPU is gearboxd's (master and children, all threads) per request.\n"]
    if sa["sha256"] == sb["sha256"] and sa["extra"] == sb["extra"]:
        L.append("**Both sides run the same binary with the same config: the ratios are this machine's "
                 "noise floor.**\n")
    if meta.get("noise"):
        L.append(meta["noise"])
    if meta.get("error"):
        L.append(f"**The run stopped early: {meta['error']}.** The figures below are what was measured.\n")
    L.append("| | " + a + " | " + b + " |\n|---|---|---|")
    L.append(f"| binary | `{sa['binary']}` | `{sb['binary']}` |")
    L.append(f"| sha256 | `{sa['sha256'][:16]}` | `{sb['sha256'][:16]}` |")
    L.append(f"| `-v` | `{sa['version']}` | `{sb['version']}` |")
    L.append(f"| extra config | {_snippet(sa)} | {_snippet(sb)} |\n")
    L.append(f"Summary: {meta['summary']}.\n")
    L.extend(table(cs, meta["names"], meta["min_ratio"]))
    L.append(f"\n✗ = ratio below {meta['min_ratio']}. *noisy runs*: runs during which other jobs on the host "
             f"used more than {NOISY_CORES} cores (figures unreliable).\n")
    if checks:
        bad = [c for c in checks if not c["ok"]]
        L.append(f"Quick checks: {len(checks) - len(bad)}/{len(checks)} passed.\n")
        L.extend(f"- FAILED: {c['what']}: {c['detail']}" for c in bad)
    L.append("## Machine\n")
    L.append(f"{meta['nproc']} CPUs ({meta['cpu']}), kernel `{meta['kernel']}`, {meta['nginx']}, {meta['wrk']}. "
             f"Load average: start {' '.join(meta['loadavg_start'])}, end {' '.join(meta['loadavg_end'])}. "
             f"Elapsed {meta['elapsed_s']} s. Models: " + ", ".join(
                 f"{c[0]} = `[{c[2]}] {c[3]} = {c[4]}`" for c in CONFIGS if c[0] in pl["models"]) + ".\n")
    L.append("Command:\n\n```sh\n" + meta["command"] + "\n```\n")
    L.extend(f"- {n}" for n in meta["notes"])
    return "\n".join(L) + "\n"


def _order(pl):
    # Runs whose plan has no "order" (before 2026-12-07 17:10 UTC) ran A first in every round.
    if pl.get("order") != "alternating":
        return f"A, then on B, so every cell sees {' '.join(['A B'] * pl['rounds'])}"
    pairs = ["A B" if r % 2 else "B A" for r in range(1, pl["rounds"] + 1)]
    return ("both sides, A first in odd rounds and B first in even ones (warm-ups too), so every "
            f"cell sees {' '.join(pairs)}")


def _pg_warmup(pl):
    # Runs before it was added (2026-12-07) opened the pools inside the first measured run.
    if not pl.get("warm_pg"):
        return ""
    return (", and 1 s of each database route at the largest c, so the pools' connections open "
            "before any measured run")


def _snippet(side):
    if not side["extra"]:
        return "–"
    return f"`{side['extra_file']}`: `" + " ".join(side["extra"].split())[:200] + "`"
