#include "daemon/handlers/status_routes.h"

#include <fmt/format.h>

#include "daemon/advisor/machine.h"
#include "daemon/clock.h"
#include "daemon/logging.h"
#include "daemon/metrics/route_reporter.h"

namespace gearbox {
namespace {

// A JSON string literal (route paths are printable; control bytes dropped).
std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (static_cast<unsigned char>(c) >= 0x20) out.push_back(c);
  }
  out.push_back('"');
  return out;
}

// An OpenMetrics label value: backslash, quote and newline escaped.
std::string LabelValue(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

double Seconds(uint64_t us) { return static_cast<double>(us) / 1e6; }

void AppendAdviceJson(const advisor::Advice& a,
                      const advisor::MachineFacts& machine, std::string& out) {
  out += fmt::format(
      ",\"advice\":{{\"pick\":\"{}\",\"size\":{},\"configured\":\"{}\","
      "\"configured_size\":{},\"differs\":{},\"idle\":{},\"disagree\":{},"
      "\"rps\":{:.1f},\"cpu_cores\":{:.3f},\"inflight\":{:.2f},"
      "\"workers\":{:.2f},\"why\":{}}}",
      a.pick, a.size, machine.model, machine.size,
      !a.idle && a.Differs(machine), a.idle, a.disagree, a.rps, a.cores,
      a.inflight, a.workers, JsonString(a.why));
}

}  // namespace

namespace {

// The last `asked` of the generation's history: the totals now minus the
// snapshot taken `asked` ago (or the oldest kept, at the generation's start).
void ReadWindow(const RouteHistory& history, Duration asked, RouteStatus& s) {
  const uint64_t now_us = NowMicros();
  const uint64_t asked_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(asked).count());
  const RouteHistory::Base base =
      history.At(now_us > asked_us ? now_us - asked_us : 0);
  s.window.interval_us = now_us > base.at_us ? now_us - base.at_us : 1;
  s.window.routes.resize(s.totals.size());
  for (size_t id = 0; id < s.totals.size(); ++id) {
    s.window.routes[id] = id < base.totals.size()
                              ? s.totals[id].Since(base.totals[id])
                              : RouteTotals{};
  }
  s.asked = asked;
}

}  // namespace

RouteStatus GatherRouteStatus(const ServerInfo& info,
                              std::optional<Duration> asked) {
  RouteStatus s;
  s.names = info.route_names;
  s.totals = info.stats->SumRoutes();
  s.window = info.stats->ReadWindow();
  if (asked && info.history) {
    ReadWindow(*info.history, *asked, s);
    // The workers now: a window can be read before the first interval has
    // published a count.
    s.window.workers = info.stats->Sum().workers;
  }
  s.machine.cores = info.cores;
  s.machine.model = info.model;
  s.machine.size = static_cast<int>(s.window.workers);
  s.machine.thread_stack_mib = advisor::ThreadStackMiB();
  if (s.window.interval_us > 0) {
    s.advice =
        advisor::Advise(WindowFigures(s.window, s.names, s.totals), s.machine);
  }
  return s;
}

void AppendRoutesJson(const RouteStatus& s, std::string& out) {
  out += fmt::format(",\"cores\":{},\"cpu_sample_every\":{},\"routes\":[",
                     s.machine.cores, kCpuSampleEvery);
  bool first = true;
  for (size_t id = 0; id < s.names.size() && id < s.totals.size(); ++id) {
    if (s.names[id].empty()) continue;
    const RouteTotals& t = s.totals[id];
    out += fmt::format(
        "{}{{\"route\":{},\"requests\":{},\"service_us\":{},\"queue_us\":{},"
        "\"wait_us\":{},\"cpu_ns\":{},\"cpu_samples\":{},\"handler_errors\":{}}"
        "}",
        first ? "" : ",", JsonString(s.names[id]), t.requests, t.service_us,
        t.queue_us, t.wait_us, t.cpu_ns, t.cpu_samples, t.handler_errors);
    first = false;
  }
  out += fmt::format("],\"window\":{{\"seconds\":{:.3f},\"workers\":{},",
                     Seconds(s.window.interval_us), s.window.workers);
  if (s.asked) {
    out += fmt::format("\"asked_s\":{:.3f},",
                       std::chrono::duration<double>(*s.asked).count());
  }
  out += "\"routes\":[";
  if (s.advice) {
    for (size_t i = 0; i < s.advice->routes.size(); ++i) {
      const advisor::RouteAdvice& r = s.advice->routes[i];
      const advisor::RouteFigures& f = r.figures;
      out += fmt::format(
          "{}{{\"route\":{},\"rps\":{:.1f},\"service_ms\":{:.3f},"
          "\"cpu_us\":{:.2f},\"wait_ms\":{:.3f},\"queue_ms\":{:.3f},"
          "\"inflight\":{:.2f},\"kind\":\"{}\",\"pick\":\"{}\",\"size\":{}}}",
          i ? "," : "", JsonString(f.route), f.rps, f.service_us / 1000,
          f.cpu_us, f.wait_us / 1000, f.queue_us / 1000, r.inflight,
          advisor::KindName(r.kind), r.pick, r.size);
    }
  }
  out += "]}";
  if (s.advice) {
    AppendAdviceJson(*s.advice, s.machine, out);
  } else {
    out += ",\"advice\":null";
  }
}

void AppendRoutesText(const RouteStatus& s, std::string& out) {
  out += fmt::format(
      "cores: {}\ncpu_sample_every: {}\nwindow_s: {:.3f}\nwindow_workers: "
      "{}\n",
      s.machine.cores, kCpuSampleEvery, Seconds(s.window.interval_us),
      s.window.workers);
  if (s.asked) {
    out += fmt::format("window_asked_s: {:.3f}\n",
                       std::chrono::duration<double>(*s.asked).count());
  }
  for (size_t id = 0; id < s.names.size() && id < s.totals.size(); ++id) {
    if (s.names[id].empty()) continue;
    const RouteTotals& t = s.totals[id];
    const RouteTotals& w = s.window.routes[id];
    out += fmt::format(
        "route: name={} requests={} service_us={} queue_us={} wait_us={} "
        "cpu_ns={} cpu_samples={} handler_errors={} w_requests={} "
        "w_service_us={} w_queue_us={} w_wait_us={} w_cpu_ns={} "
        "w_cpu_samples={}\n",
        LogQuote(s.names[id]), t.requests, t.service_us, t.queue_us, t.wait_us,
        t.cpu_ns, t.cpu_samples, t.handler_errors, w.requests, w.service_us,
        w.queue_us, w.wait_us, w.cpu_ns, w.cpu_samples);
  }
  if (!s.advice) {
    out += "advice: none (no stats interval completed yet)\n";
    return;
  }
  const advisor::Advice& a = *s.advice;
  out += fmt::format(
      "advice: pick={} size={} configured={} configured_size={} differs={} "
      "idle={} disagree={} why={}\n",
      a.pick, a.size, s.machine.model, s.machine.size,
      !a.idle && a.Differs(s.machine), a.idle, a.disagree, LogQuote(a.why));
}

void AppendRoutesOpenMetrics(const RouteStatus& s, std::string& out) {
  struct Family {
    std::string_view name, help;
    double (*value)(const RouteTotals&);
  };
  static constexpr Family kFamilies[] = {
      {"route_requests", "Requests answered, by route.",
       [](const RouteTotals& t) { return static_cast<double>(t.requests); }},
      {"route_service_seconds", "Handler start to response, summed.",
       [](const RouteTotals& t) { return Seconds(t.service_us); }},
      {"route_queue_seconds", "Connection ready to handler start, summed.",
       [](const RouteTotals& t) { return Seconds(t.queue_us); }},
      {"route_wait_seconds", "Time handlers spent waiting, summed.",
       [](const RouteTotals& t) { return Seconds(t.wait_us); }},
      {"route_cpu_sampled_seconds",
       "Thread CPU time of the sampled requests (1 in cpu_sample_every).",
       [](const RouteTotals& t) {
         return static_cast<double>(t.cpu_ns) / 1e9;
       }},
      {"route_cpu_samples", "Requests whose CPU time was sampled.",
       [](const RouteTotals& t) { return static_cast<double>(t.cpu_samples); }},
      {"route_handler_errors",
       "Requests the handler failed (a Lua runtime error, a module's "
       "malformed answer), answered 500.",
       [](const RouteTotals& t) {
         return static_cast<double>(t.handler_errors);
       }},
  };
  for (const Family& f : kFamilies) {
    out += fmt::format("# TYPE gearbox_{} counter\n# HELP gearbox_{} {}\n",
                       f.name, f.name, f.help);
    for (size_t id = 0; id < s.names.size() && id < s.totals.size(); ++id) {
      if (s.names[id].empty()) continue;
      out += fmt::format("gearbox_{}_total{{route=\"{}\"}} {}\n", f.name,
                         LabelValue(s.names[id]), f.value(s.totals[id]));
    }
  }
  if (!s.advice) return;
  out +=
      "# TYPE gearbox_advice info\n# HELP gearbox_advice The model advisor's "
      "pick for the last stats interval.\n";
  out += fmt::format("gearbox_advice_info{{pick=\"{}\",size=\"{}\"}} 1\n",
                     s.advice->pick, s.advice->size);
}

}  // namespace gearbox
