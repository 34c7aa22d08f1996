#include "daemon/advisor/advisor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gearbox::advisor {
namespace {

constexpr double kUsPerSecond = 1e6;

// Whole workers for a fractional need, at least one. The epsilon keeps an
// exact 2.0 from becoming 3 through rounding noise.
int AtLeastOne(double need) {
  return std::max(1, static_cast<int>(std::ceil(need - 1e-9)));
}

int Loops(double load, int cores) {
  return std::clamp(AtLeastOne(load), 1, std::max(1, cores));
}

RouteKind Classify(const RouteFigures& f, double wait_share) {
  if (f.cpu_us >= kCpuHeavyUs) return RouteKind::kCpuHeavy;
  if (wait_share >= kWaitingShare) return RouteKind::kWaiting;
  return RouteKind::kLight;
}

std::string LoopPhrase(int loops, double load) {
  const double pct = 100.0 * load / loops;
  if (loops == 1) return fmt::format("one async loop at {:.0f}% CPU", pct);
  return fmt::format("{} async loops at {:.0f}% CPU each", loops, pct);
}

// A double-quoted string, `"` and `\` escaped.
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

// A route's label inside a `why`: as written when it is one plain word, else
// in double quotes (a label like "DELETE,PUT /x" holds the list separator
// and a space). So a list of labels, ", " between them, reads one way.
std::string Label(std::string_view route) {
  bool plain = !route.empty();
  for (char c : route) {
    plain = plain && static_cast<unsigned char>(c) > 0x20 && c != ',' &&
            c != ';' && c != '"' && c != '\'' && c != '\\';
  }
  return plain ? std::string(route) : Quote(route);
}

// Three significant digits, no exponent: 9400, 12.5, 6, 0.31.
std::string Num(double x) {
  if (x >= 100) return fmt::format("{:.0f}", x);
  if (x < 0.001) return "0";
  return fmt::format("{:.3g}", x);
}

// "1 thread", "2 threads".
std::string Count(int n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string BlockingPhrase(int workers) {
  return fmt::format("prefork would need >= {}, threadpool >= {}",
                     Count(workers, "worker", "workers"),
                     Count(workers, "thread", "threads"));
}

std::string RouteWhy(const RouteAdvice& r, const MachineFacts& machine) {
  const int workers = AtLeastOne(r.workers);
  switch (r.kind) {
    case RouteKind::kWaiting:
      return fmt::format("{:.0f}% of service time is waiting; {}; {}",
                         100 * r.wait_share, BlockingPhrase(workers),
                         LoopPhrase(r.size, r.async_load));
    case RouteKind::kLight:
      return fmt::format(
          "light: {} us of CPU per request, {:.0f}% waiting; async adds "
          "~{:.0f} us of I/O per request, threadpool ~{:.0f}, prefork ~{:.0f}; "
          "{}",
          Num(r.figures.cpu_us), 100 * r.wait_share, kAsyncCostUs,
          kThreadpoolCostUs, kPreforkCostUs, LoopPhrase(r.size, r.async_load));
    case RouteKind::kCpuHeavy:
      break;
  }
  std::string why = fmt::format(
      "CPU-heavy: {} us of CPU per request, {} of {} cores; an async loop "
      "would stall its other connections {} us per request and cannot pass "
      "work to an idle loop; threadpool >= {} (prefork: {}, ~{:.0f} MiB)",
      Num(r.figures.cpu_us), Num(r.cores), machine.cores, Num(r.figures.cpu_us),
      Count(r.size, "thread", "threads"), Count(r.size, "child", "children"),
      r.size * kForkChildMiB);
  if (r.cores >= 0.9 * machine.cores) {
    why += "; the CPU is the limit: more cores would help, more workers not";
  }
  return why;
}

RouteAdvice AdviseRoute(const RouteFigures& f, const MachineFacts& machine) {
  RouteAdvice r;
  r.figures = f;
  const double rate = f.rps / kUsPerSecond;  // requests per microsecond
  r.wait_share =
      f.service_us > 0 ? std::min(1.0, f.wait_us / f.service_us) : 0.0;
  r.kind = Classify(f, r.wait_share);
  r.inflight = rate * f.service_us;
  r.cores = rate * f.cpu_us;
  r.async_load = rate * (f.cpu_us + kAsyncCostUs);
  const double queue = r.kind == RouteKind::kCpuHeavy ? 0 : f.queue_us;
  r.workers = rate * (queue + f.cpu_us + f.wait_us);
  if (r.kind == RouteKind::kCpuHeavy) {
    r.pick = "threadpool";
    r.size = AtLeastOne(r.workers);
  } else {
    r.pick = "async";
    r.size = Loops(r.async_load, machine.cores);
  }
  r.why = RouteWhy(r, machine);
  return r;
}

std::string Names(const std::vector<const RouteAdvice*>& routes) {
  std::string out;
  for (size_t i = 0; i < routes.size() && i < 3; ++i) {
    if (i) out += ", ";
    out += Label(routes[i]->figures.route);
  }
  if (routes.size() > 3) out += fmt::format(" and {} more", routes.size() - 3);
  return out;
}

// Every route runs well on async (or the CPU-heavy ones are rare).
void PickAsync(Advice& a, const MachineFacts& machine,
               const std::vector<const RouteAdvice*>& heavy, double share) {
  a.pick = "async";
  a.size = Loops(a.async_load, machine.cores);
  a.why = fmt::format("every route with traffic fits async; {}; {}",
                      LoopPhrase(a.size, a.async_load),
                      BlockingPhrase(AtLeastOne(a.workers)));
  if (!heavy.empty()) {
    a.why += fmt::format(
        "; CPU-heavy {} are only {}% of requests: their stalls are rare",
        Names(heavy), Num(100 * share));
  }
}

// How long the heaviest route's run holds a loop, against the shortest
// service time among the other routes: the delay it adds to a request that
// shares the loop, as a share of that request's own time.
struct Stall {
  double share = 1;
  std::string what;  // "a 200 us run of /burn is 1% of /sleep's 20.1 ms"
};

Stall WorstStall(const std::vector<const RouteAdvice*>& heavy,
                 const std::vector<const RouteAdvice*>& others) {
  auto by_cpu = [](const RouteAdvice* x, const RouteAdvice* y) {
    return x->figures.cpu_us < y->figures.cpu_us;
  };
  auto by_service = [](const RouteAdvice* x, const RouteAdvice* y) {
    return x->figures.service_us < y->figures.service_us;
  };
  const RouteFigures& run =
      (*std::max_element(heavy.begin(), heavy.end(), by_cpu))->figures;
  const RouteFigures& quick =
      (*std::min_element(others.begin(), others.end(), by_service))->figures;
  Stall s;
  if (quick.service_us > 0) s.share = run.cpu_us / quick.service_us;
  s.what = fmt::format("a {} us run of {} is {}% of {}'s {} ms",
                       Num(run.cpu_us), Label(run.route), Num(100 * s.share),
                       Label(quick.route), Num(quick.service_us / 1000));
  return s;
}

void PickThreads(Advice& a, const MachineFacts& machine,
                 const std::vector<const RouteAdvice*>& heavy,
                 const std::vector<const RouteAdvice*>& others) {
  const int threads = AtLeastOne(a.workers);
  const double resident_kib = threads * kThreadResidentKiB;
  const std::string memory = fmt::format(
      "{:.0f} MiB of virtual stack, ~{} resident; prefork: {}, ~{:.0f} MiB",
      threads * machine.thread_stack_mib,
      resident_kib < 1024 ? fmt::format("{:.0f} KiB", resident_kib)
                          : fmt::format("{:.1f} MiB", resident_kib / 1024),
      Count(threads, "child", "children"), threads * kForkChildMiB);
  if (others.empty()) {
    a.pick = "threadpool";
    a.size = threads;
    a.why = fmt::format(
        "CPU-bound: {} of {} cores; threadpool >= {} ({}); async "
        "loops would stall behind each request and cannot share the cores",
        Num(a.cores), machine.cores, Count(threads, "thread", "threads"),
        memory);
    return;
  }
  a.disagree = true;
  const std::string split = fmt::format(
      "split {} onto a second gearboxd (threadpool) behind its own nginx "
      "location and run {} on async",
      Names(heavy), Names(others));
  const std::string conflict =
      fmt::format("routes disagree: {} CPU-heavy (threadpool), async suits {}",
                  Names(heavy), Names(others));
  const Stall stall = WorstStall(heavy, others);
  if (threads > kMaxThreads) {
    a.pick = "async";
    a.size = std::max(1, machine.cores);
    a.why = fmt::format(
        "{}; {} requests need a worker at once, more than {} threads should "
        "hold: async with loops = cores ({}), or {}",
        conflict, threads, kMaxThreads, a.size, split);
  } else if (stall.share < kStallShare) {
    a.pick = "async";
    a.size = std::max(1, machine.cores);
    a.why = fmt::format(
        "{}; {}: async with loops = cores ({}) serves both ({}; threadpool "
        "would hold {}), or {}",
        conflict, stall.what, a.size, LoopPhrase(a.size, a.async_load),
        Count(threads, "thread", "threads"), split);
  } else {
    a.pick = "threadpool";
    a.size = threads;
    a.why = fmt::format(
        "{}; {}: one threadpool of >= {} serves both ({}); or {}", conflict,
        stall.what, Count(threads, "thread", "threads"), memory, split);
  }
}

}  // namespace

std::string_view KindName(RouteKind kind) {
  switch (kind) {
    case RouteKind::kLight:
      return "light";
    case RouteKind::kWaiting:
      return "waiting";
    case RouteKind::kCpuHeavy:
      return "cpu";
  }
  return "light";
}

Advice Advise(std::span<const RouteFigures> routes,
              const MachineFacts& machine) {
  Advice a;
  for (const RouteFigures& f : routes) {
    if (f.rps <= 0) continue;
    a.routes.push_back(AdviseRoute(f, machine));
    const RouteAdvice& r = a.routes.back();
    a.rps += f.rps;
    a.inflight += r.inflight;
    a.workers += r.workers;
    a.cores += r.cores;
    a.async_load += r.async_load;
  }
  // Busy share of one worker if every request cost only its own work plus
  // the cheapest model's I/O.
  double load = 0;
  for (const RouteAdvice& r : a.routes) {
    load += r.figures.rps / kUsPerSecond *
            (r.figures.cpu_us + r.figures.wait_us + kAsyncCostUs);
  }
  if (load < kIdleLoad) {
    a.idle = true;
    a.pick = machine.model;
    a.size = machine.size;
    a.why = fmt::format(
        "little traffic ({} req/s keeps {:.1f}% of one worker busy): any "
        "model fits; keep {}",
        Num(a.rps), 100 * load, machine.model);
    return a;
  }
  // Shares of requests, not rates: the mix is the same whichever model
  // serves it, while rates follow each model's capacity.
  std::vector<const RouteAdvice*> heavy, others;
  double heavy_share = 0;
  for (const RouteAdvice& r : a.routes) {
    const double share = r.figures.rps / a.rps;
    if (r.kind == RouteKind::kCpuHeavy) {
      heavy.push_back(&r);
      heavy_share += share;
    } else if (share >= kShareThatCounts) {
      others.push_back(&r);  // traffic that matters, not a health check
    }
  }
  if (heavy.empty() || heavy_share < kShareThatCounts) {
    PickAsync(a, machine, heavy, heavy_share);
  } else {
    PickThreads(a, machine, heavy, others);
  }
  return a;
}

namespace {

std::string RouteValue(std::string_view route) {
  bool plain = !route.empty();
  for (char c : route) plain = plain && c != ' ' && c != '"' && c != '=';
  return plain ? std::string(route) : Quote(route);
}

}  // namespace

std::string FormatRouteLine(const RouteAdvice& r) {
  return fmt::format(
      "route={} pick={} size={} rps={} cpu_us={} wait_ms={:.2f} "
      "inflight={:.1f} "
      "why={}",
      RouteValue(r.figures.route), r.pick, r.size, Num(r.figures.rps),
      Num(r.figures.cpu_us), r.figures.wait_us / 1000, r.inflight,
      Quote(r.why));
}

std::string FormatSummaryLine(const Advice& a, const MachineFacts& machine,
                              const WindowFacts& window) {
  const std::string asked =
      window.asked_s > 0
          ? fmt::format(" window_asked_s={}", Num(window.asked_s))
          : "";
  return fmt::format(
      "summary window_s={:.1f}{} pick={} size={} configured={} "
      "configured_size={} cores={} rps={} cpu_cores={:.2f} inflight={:.1f} "
      "workers={:.1f} why={}",
      window.seconds, asked, a.pick, a.size, machine.model, machine.size,
      machine.cores, Num(a.rps), a.cores, a.inflight, a.workers, Quote(a.why));
}

}  // namespace gearbox::advisor
