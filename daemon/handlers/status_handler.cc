// `status`: live figures for operators and scrapers.
//   GET /status                    JSON
//   GET /status?format=text        one "key: value" per line
//   GET /status?format=openmetrics Prometheus / OpenMetrics exposition
//   add &full (or ?full)           per-worker rows: pid/tid, state, requests,
//                                  current path and its age, lua_kib
//   add &window=60s                the per-route window and the advice over
//                                  the last 60 s (1s..15m; since the
//                                  generation started, if that is shorter)
// Every format has the per-route figures and the model advisor's pick for
// the last stats interval, or the window asked for (status_routes.cc).
// Served from the shared stats region, so under prefork any child reports the
// totals of all children. Put it on its own [[listen]] (name = "status") to
// keep health checks from queueing behind work.
#include <fmt/format.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "daemon/clock.h"
#include "daemon/handlers/handlers.h"
#include "daemon/handlers/status_routes.h"

namespace gearbox {
namespace {

double Ms(uint64_t us) { return static_cast<double>(us) / 1000.0; }

struct Worker {
  size_t slot;
  int pid, tid;
  bool busy;
  uint64_t requests, conns;
  uint64_t lua_kib;  // its Lua state after its last full collection
  std::string path;
  double age_ms;
};

enum class Format { kJson, kText, kOpenMetrics };

class StatusHandler final : public Handler {
 public:
  explicit StatusHandler(const ServerInfo& info) : info_(info) {}

  std::unique_ptr<Exchange> Start(const Request& request) override {
    // Decide now: the request's views are only valid during Start().
    std::string_view f = request.QueryParam("format");
    const Format format = f == "text" ? Format::kText
                          : f == "openmetrics" || f == "prometheus"
                              ? Format::kOpenMetrics
                              : Format::kJson;
    const bool full = request.query.find("full") != std::string_view::npos;
    std::optional<Duration> window;
    if (std::string_view w = request.QueryParam("window"); !w.empty()) {
      std::string error;
      window = ParseWindow(w, "window=", &error);
      if (!window) {
        return Immediately([error](Response& response) {
          response.status = 400;
          response.body = error + "\n";
        });
      }
    }
    return Immediately([this, format, full, window](Response& response) {
      StatsRegion::Totals t;
      if (info_.stats && format != Format::kOpenMetrics) t = info_.stats->Sum();
      std::vector<Worker> workers;
      if (full && info_.stats) workers = Workers();
      std::optional<RouteStatus> routes;
      if (info_.stats) routes = GatherRouteStatus(info_, window);
      if (format == Format::kText) {
        response.content_type = "text/plain";
        RenderText(t, workers, routes, response.body);
      } else if (format == Format::kOpenMetrics) {
        response.content_type =
            "application/openmetrics-text; version=1.0.0; charset=utf-8";
        RenderOpenMetrics(Lifetime(), routes, response.body);
      } else {
        response.content_type = "application/json";
        RenderJson(t, workers, routes, response.body);
      }
    });
  }

 private:
  double Uptime() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         info_.started)
        .count();
  }

  std::vector<Worker> Workers() const {
    std::vector<Worker> out;
    const uint64_t now = NowMicros();
    for (size_t i = 0; i < info_.stats->size(); ++i) {
      const WorkerStats& s = info_.stats->Slot(i);
      uint64_t start = s.current_start_us.load(std::memory_order_relaxed);
      Worker w;
      w.slot = i;
      w.pid = s.pid.load();
      w.tid = s.tid.load();
      w.busy = start != 0;
      w.requests = s.requests.load(std::memory_order_relaxed);
      w.conns = s.open_conns.load(std::memory_order_relaxed) +
                s.idle_held.load(std::memory_order_relaxed);
      w.lua_kib = s.lua_kib.load(std::memory_order_relaxed);
      w.path = w.busy ? s.CurrentPath() : "";
      w.age_ms = w.busy && now > start ? Ms(now - start) : 0;
      out.push_back(std::move(w));
    }
    return out;
  }

  void RenderJson(const StatsRegion::Totals& t,
                  const std::vector<Worker>& workers,
                  const std::optional<RouteStatus>& routes,
                  std::string& out) const {
    uint64_t closed = 0;
    for (uint64_t c : t.closed) closed += c;
    out = fmt::format(
        "{{\"model\":\"{}\",\"generation\":{},\"pid\":{},\"uptime_s\":{:.3f},"
        "\"requests\":{},\"inflight\":{},\"busy\":{},\"queue\":{},"
        "\"pool\":{{\"workers\":{},\"min\":{},\"max\":{}}},"
        "\"connections\":{{\"accepted\":{},\"open\":{},\"closed\":{},"
        "\"idle_timeout\":{},\"header_timeout\":{},\"send_timeout\":{},"
        "\"drain\":{},\"by_client\":{},\"by_server\":{},\"error\":{},"
        "\"parked\":{}}},"
        "\"status\":{{\"1xx\":{},\"2xx\":{},\"3xx\":{},\"4xx\":{},\"5xx\":{}}},"
        "\"rejected\":{},\"bad_input\":{},\"request_timeouts\":{},"
        "\"loop_stalls\":{},"
        "\"bytes_in\":{},\"bytes_out\":{},"
        "\"latency_ms\":{{\"p50\":{:.3f},\"p90\":{:.3f},\"p99\":{:.3f},\"max\":"
        "{:.3f}}},"
        "\"queue_wait_ms\":{{\"p50\":{:.3f},\"p99\":{:.3f}}}",
        info_.model, info_.generation, getpid(), Uptime(), t.requests,
        t.inflight, t.busy, t.queue_depth, t.workers, t.workers_min,
        t.workers_max, t.accepted, t.open(), closed,
        t.closed[static_cast<int>(CloseReason::kIdleTimeout)],
        t.closed[static_cast<int>(CloseReason::kHeaderTimeout)],
        t.closed[static_cast<int>(CloseReason::kSendTimeout)],
        t.closed[static_cast<int>(CloseReason::kDrain)],
        t.closed[static_cast<int>(CloseReason::kClient)],
        t.closed[static_cast<int>(CloseReason::kServer)],
        t.closed[static_cast<int>(CloseReason::kError)], t.parked,
        t.status_class[1], t.status_class[2], t.status_class[3],
        t.status_class[4], t.status_class[5], t.rejected, t.bad_input,
        t.request_timeouts, t.loop_stalls, t.bytes_in, t.bytes_out,
        Ms(t.service.Percentile(0.5)), Ms(t.service.Percentile(0.9)),
        Ms(t.service.Percentile(0.99)), Ms(t.service.Max()),
        Ms(t.queue_wait.Percentile(0.5)), Ms(t.queue_wait.Percentile(0.99)));
    if (routes) AppendRoutesJson(*routes, out);
    if (!workers.empty()) {
      out += ",\"workers\":[";
      for (size_t i = 0; i < workers.size(); ++i) {
        const Worker& w = workers[i];
        std::string path;
        for (char ch : w.path) {
          if (ch == '"' || ch == '\\') path.push_back('\\');
          if (static_cast<unsigned char>(ch) >= 0x20) path.push_back(ch);
        }
        out += fmt::format(
            "{}{{\"slot\":{},\"pid\":{},\"tid\":{},\"state\":\"{}\","
            "\"requests\":{},"
            "\"conns\":{},\"path\":\"{}\",\"age_ms\":{:.3f},"
            "\"lua_kib\":{}}}",
            i ? "," : "", w.slot, w.pid, w.tid, w.busy ? "busy" : "idle",
            w.requests, w.conns, path, w.age_ms, w.lua_kib);
      }
      out += "]";
    }
    out += "}\n";
  }

  void RenderText(const StatsRegion::Totals& t,
                  const std::vector<Worker>& workers,
                  const std::optional<RouteStatus>& routes,
                  std::string& out) const {
    out = fmt::format(
        "model: {}\ngeneration: {}\npid: {}\nuptime_s: {:.3f}\nrequests: {}\n"
        "inflight: {}\nbusy: {}\nqueue: {}\nworkers: {}\nworkers_min: {}\n"
        "workers_max: {}\nconnections_open: {}\n"
        "connections_accepted: {}\ns2xx: {}\ns4xx: {}\ns5xx: {}\nrejected: {}\n"
        "bad_input: {}\nrequest_timeouts: {}\nloop_stalls: {}\np50_ms: "
        "{:.3f}\np99_ms: {:.3f}\n",
        info_.model, info_.generation, getpid(), Uptime(), t.requests,
        t.inflight, t.busy, t.queue_depth, t.workers, t.workers_min,
        t.workers_max, t.open(), t.accepted, t.status_class[2],
        t.status_class[4], t.status_class[5], t.rejected, t.bad_input,
        t.request_timeouts, t.loop_stalls, Ms(t.service.Percentile(0.5)),
        Ms(t.service.Percentile(0.99)));
    if (routes) AppendRoutesText(*routes, out);
    for (const Worker& w : workers) {
      out += fmt::format(
          "worker {}: pid={} tid={} state={} requests={} path={} "
          "age_ms={:.3f} lua_kib={}\n",
          w.slot, w.pid, w.tid, w.busy ? "busy" : "idle", w.requests,
          w.path.empty() ? "-" : w.path, w.age_ms, w.lua_kib);
    }
  }

  // Counters since the process started, summed over its generations, so a
  // reload neither resets nor repeats them; gauges of every generation still
  // running (an old one draining after a reload included).
  StatsRegion::Totals Lifetime() const {
    if (info_.lifetime) return info_.lifetime->Sum(info_.live);
    return info_.stats ? info_.stats->Sum() : StatsRegion::Totals{};
  }

  // The model and generation are labels of gearbox_info only: a label that
  // changes on reload on every series would start new series at each reload
  // and split every rate() in two.
  void RenderOpenMetrics(const StatsRegion::Totals& t,
                         const std::optional<RouteStatus>& routes,
                         std::string& out) const {
    out = fmt::format(
        "# TYPE gearbox info\n# HELP gearbox The model and config generation "
        "serving.\ngearbox_info{{model=\"{}\",generation=\"{}\"}} 1\n",
        info_.model, info_.generation);
    auto metric = [&](std::string_view name, std::string_view type,
                      std::string_view help, auto value) {
      out += fmt::format("# TYPE gearbox_{} {}\n# HELP gearbox_{} {}\n", name,
                         type, name, help);
      out += fmt::format("gearbox_{}{} {}\n", name,
                         type == "counter" ? "_total" : "", value);
    };
    metric("requests", "counter", "Requests answered.", t.requests);
    metric("rejected", "counter", "Requests refused with 503 (queue or cap).",
           t.rejected);
    metric("bad_input", "counter", "Connections closed for unparseable input.",
           t.bad_input);
    metric("request_timeouts", "counter",
           "Requests past their deadline (504, or a prefork child killed).",
           t.request_timeouts);
    metric("loop_stalls", "counter",
           "async: callbacks that ran past [async] stall_threshold.",
           t.loop_stalls);
    metric("connections_accepted", "counter", "Connections accepted.",
           t.accepted);
    metric("connections_open", "gauge", "Connections open now.", t.open());
    metric("connections_parked", "counter",
           "Slow request heads the prefork head guard took over.", t.parked);
    metric("inflight", "gauge", "Requests in progress.", t.inflight);
    metric("busy_workers", "gauge", "Workers serving a request.", t.busy);
    metric("workers", "gauge", "Workers (threads, children or loops).",
           t.workers);
    metric("queue_depth", "gauge", "Threadpool hand-off queue depth.",
           t.queue_depth);
    metric("workers_min", "gauge", "The fewest workers the pool keeps.",
           t.workers_min);
    metric("workers_max", "gauge", "The most workers the pool may grow to.",
           t.workers_max);
    metric("generation", "gauge", "Config generation.", info_.generation);
    out +=
        "# TYPE gearbox_responses counter\n# HELP gearbox_responses Responses "
        "by status class.\n";
    for (int c = 1; c <= 5; ++c) {
      out += fmt::format("gearbox_responses_total{{class=\"{}xx\"}} {}\n", c,
                         t.status_class[c]);
    }
    RenderHistogram(t.service, out);
    if (routes) AppendRoutesOpenMetrics(*routes, out);
    out += "# EOF\n";
  }

  // The log-linear buckets folded into a few fixed bounds. A log-linear bucket
  // counts under the first bound at or above its upper end, so a bound's count
  // never includes a value above it.
  static void RenderHistogram(const HistogramSnapshot& h, std::string& out) {
    out +=
        "# TYPE gearbox_request_duration_seconds histogram\n"
        "# HELP gearbox_request_duration_seconds Handler start to response.\n";
    static constexpr uint64_t kBoundsUs[] = {
        100,   250,    500,    1000,   2500,    5000,    10000,   25000,
        50000, 100000, 250000, 500000, 1000000, 2500000, 10000000};
    uint64_t cumulative = 0;
    int bucket = 0;
    for (uint64_t bound : kBoundsUs) {
      while (bucket < kHistogramBuckets &&
             HistogramBucketUpper(bucket) <= bound)
        cumulative += h.buckets[bucket++];
      out += fmt::format(
          "gearbox_request_duration_seconds_bucket{{le=\"{}\"}} {}\n",
          static_cast<double>(bound) / 1e6, cumulative);
    }
    out += fmt::format(
        "gearbox_request_duration_seconds_bucket{{le=\"+Inf\"}} {}\n"
        "gearbox_request_duration_seconds_count {}\n"
        "gearbox_request_duration_seconds_sum {}\n",
        h.Count(), h.Count(), static_cast<double>(h.sum_us) / 1e6);
  }

  const ServerInfo info_;
};

}  // namespace

std::unique_ptr<Handler> MakeStatusHandler(const RouteConfig&,
                                           const ServerInfo& info) {
  return std::make_unique<StatusHandler>(info);
}

}  // namespace gearbox
