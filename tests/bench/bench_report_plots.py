"""bench_report_plots.py: the report's gnuplot PNGs and their .gp/.dat sources
(throughput against concurrency per workload and route, idle RSS, the seed profile);
without gnuplot they are skipped and a note says so. Standard library only."""
import os
import shutil
import subprocess

from bench_report_common import PLOT_ROUTES, route


class Plots:
    """The plots of bench_report.Report (a mixin: reads its configs, plan, workloads,
    runs, idle and meta; adds to its plots and notes)."""

    # Plots: throughput vs concurrency, one line per server configuration.
    def series(self, workload, path):
        """[(label, [(conc, rps)])] for one workload over one route (see route())."""
        lines = []
        servers = [c[0] for c in self.configs if c[0] in self.plan["configs"]]
        if workload == "hello":
            servers = ["nginx"] + servers
        for s in servers:
            p = "ref" if s == "nginx" else path
            pts = sorted((r["conc"], r["rps"]) for r in self.runs
                         if r["kind"] == "wrk" and r["server"] == s and route(r) == p
                         and r["workload"] == workload and not r.get("tag"))
            if pts:
                lines.append(("nginx return 200 (1 worker)" if s == "nginx" else s, pts))
        return lines

    def make_plots(self, out):
        gp = shutil.which("gnuplot")
        if not gp:
            self.notes.append("gnuplot is not installed (apt-get install gnuplot-nox): no plots")
            return
        term = _terminal(gp)
        jobs = []
        for w in self.workloads:
            for path, suffix, what in PLOT_ROUTES:
                job = self._series_job(out, term, w, path, suffix, what)
                if job:
                    jobs.append(job)
        jobs += self._idle_job(out, term)
        jobs += self._seed_job(out, term)
        self._run_gnuplot(gp, out, jobs)

    def _series_job(self, out, term, w, path, suffix, what):
        """Workload w's throughput over one route against concurrency, a line per
        configuration: writes W-SUFFIX.dat, returns (name, gnuplot script), or None when
        there is nothing of gearboxd's to draw."""
        lines = self.series(w, path)
        if not any(len(p) for _, p in lines) or all(n.startswith("nginx") for n, _ in lines):
            return None
        name = f"{w}-{suffix}"
        with open(os.path.join(out, name + ".dat"), "w") as f:
            for label, pts in lines:
                f.write(f"# {label}\n")
                for c, rps in pts:
                    f.write(f"{c} {rps:.1f}\n")
                f.write("\n\n")
        plots = ", ".join(f"'{name}.dat' index {i} with linespoints lw 2 pt 7 title '{label}'"
                          for i, (label, _) in enumerate(lines))
        # Waits span 50 to 150,000 req/s between models: a log scale shows both ends.
        yscale = ("set logscale y\nset yrange [10:*]\n" if w.startswith("wait")
                  else "set yrange [0:*]\n")
        script = (f"set terminal {term}\nset output '{name}.png'\n"
                  f"set title '{w} ({self.workloads[w]}), {what}: wrk -t1, "
                  f"{self.meta['duration_per_point_s']} s per point'\n"
                  "set logscale x 2\nset xlabel 'concurrent connections (wrk -c)'\n"
                  "set ylabel 'requests/s'\n" + yscale + "set grid\n"
                  "set key outside right top\n"
                  f"plot {plots}\n")
        return (name, script)

    def _idle_job(self, out, term):
        """RSS per idle connection, a bar per configuration: writes idle.dat, returns
        [("idle", script)], or [] without idle measurements."""
        idle = [i for i in self.idle if i["kind"] == "idle" and i.get("bytes_per_conn") is not None]
        if not idle:
            return []
        with open(os.path.join(out, "idle.dat"), "w") as f:
            for i in idle:
                f.write(f"{i['server']} {i['bytes_per_conn']:.1f}\n")
        return [("idle", f"set terminal {term}\nset output 'idle.png'\n"
                 f"set title 'daemon RSS per idle keep-alive connection ({idle[0]['count']} idle)'\n"
                 f"set style fill solid 0.6\nset boxwidth 0.6\nset xrange [-0.6:{len(idle) - 0.4}]\n"
                 "set yrange [0:*]\nset grid y\n"
                 "set ylabel 'bytes per connection'\nset arrow from graph 0, first 1024 to "
                 "graph 1, first 1024 nohead dt 2\n"
                 "plot 'idle.dat' using 0:2:xtic(1) with boxes notitle\n")]

    def _seed_job(self, out, term):
        """The seed profile's (httperf, /sleep?ms=1) 2xx/s and errors, a bar per
        configuration: writes seed.dat, returns [("seed", script)], or [] without seed runs."""
        seed = [r for r in self.runs if r["kind"] == "httperf" and r["workload"] == "wait1ms"]
        if not seed:
            return []
        with open(os.path.join(out, "seed.dat"), "w") as f:
            for r in seed:
                f.write(f"{r['server']} {r.get('rps') or 0:.1f} {r.get('errors') or 0} {r.get('s5xx') or 0}\n")
        return [("seed", f"set terminal {term}\nset output 'seed.png'\n"
                 "set title 'seed profile through nginx, /sleep?ms=1: httperf --rate 100 "
                 "--num-conn N --num-call 10 (1,000 req/s offered)'\n"
                 f"set style fill solid 0.6\nset boxwidth 0.6\nset xrange [-0.6:{len(seed) - 0.4}]\n"
                 "set yrange [0:1150]\nset grid y\nset ylabel 'successful replies/s'\n"
                 "plot 'seed.dat' using 0:2:xtic(1) with boxes title '2xx/s', "
                 "'' using 0:2:(sprintf('%d errors, %d 5xx', $3, $4)) with labels offset 0,1 notitle\n")]

    def _run_gnuplot(self, gp, out, jobs):
        """Writes each job's NAME.gp and runs it in out; a PNG that drew is listed in
        plots, a failure becomes a note."""
        for name, script in jobs:
            with open(os.path.join(out, name + ".gp"), "w") as f:
                f.write(script)
            p = subprocess.run([gp, name + ".gp"], cwd=out, capture_output=True, text=True, timeout=60)
            if p.returncode == 0:
                self.plots.append(name + ".png")
            else:
                self.notes.append(f"gnuplot {name}.gp failed: {p.stderr.strip()[:200]}")


def _terminal(gp):
    """pngcairo where this gnuplot has it, else the plain png terminal. (gnuplot 5.4
    lists its terminals on stderr; both streams are read.)"""
    terms = subprocess.run([gp, "-e", "set terminal"], capture_output=True, text=True).stdout + \
        subprocess.run([gp, "-e", "set terminal"], capture_output=True, text=True).stderr
    return "pngcairo size 900,540 font ',10'" if "pngcairo" in terms else "png size 900,540"
