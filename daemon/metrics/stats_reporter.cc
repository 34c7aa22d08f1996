#include "daemon/metrics/stats_reporter.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "daemon/logging.h"

namespace gearbox {
namespace {

double Ms(uint64_t us) { return static_cast<double>(us) / 1000.0; }

}  // namespace

namespace {

// systemd.exec(5): JOURNAL_STREAM=dev:ino names the journal stream systemd gave
// us; it counts only if stderr is still that stream (a child of a unit that
// redirected stderr elsewhere inherits the variable but not the stream).
bool StderrIsJournal() {
  const char* env = getenv("JOURNAL_STREAM");
  if (!env) return false;
  unsigned long long dev = 0, ino = 0;
  if (sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st;
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<unsigned long long>(st.st_dev) == dev &&
         static_cast<unsigned long long>(st.st_ino) == ino;
}

// What one interval adds to the region's totals, for the journal's fields.
struct IntervalFigures {
  double rps;
  const HistogramSnapshot& service;
  uint64_t queue_max;
  int workers;
  int64_t accept_queue;
  int64_t accept_queue_max;
};

// The line to the journal, with each figure as a structured field
// (GEARBOX_RPS= ...). Returns sd_journal_send's result.
int SendStatsToJournal(const std::string& line, std::string_view model,
                       int generation, const StatsRegion::Totals& t,
                       const IntervalFigures& f) {
  return sd_journal_send(
      "MESSAGE=event=stats %s", line.c_str(), "PRIORITY=6",
      "SYSLOG_IDENTIFIER=gearboxd", "GEARBOX_EVENT=stats", "GEARBOX_MODEL=%.*s",
      static_cast<int>(model.size()), model.data(), "GEARBOX_GENERATION=%d",
      generation, "GEARBOX_RPS=%.1f", f.rps, "GEARBOX_REQUESTS=%llu",
      static_cast<unsigned long long>(t.requests), "GEARBOX_P50_MS=%.3f",
      Ms(f.service.Percentile(0.5)), "GEARBOX_P90_MS=%.3f",
      Ms(f.service.Percentile(0.9)), "GEARBOX_P99_MS=%.3f",
      Ms(f.service.Percentile(0.99)), "GEARBOX_MAX_MS=%.3f",
      Ms(f.service.Max()), "GEARBOX_INFLIGHT=%llu",
      static_cast<unsigned long long>(t.inflight), "GEARBOX_CONNS=%llu",
      static_cast<unsigned long long>(t.open()), "GEARBOX_BUSY=%llu",
      static_cast<unsigned long long>(t.busy), "GEARBOX_WORKERS=%d", f.workers,
      "GEARBOX_WORKERS_MIN=%lld", static_cast<long long>(t.workers_min),
      "GEARBOX_WORKERS_MAX=%lld", static_cast<long long>(t.workers_max),
      "GEARBOX_QUEUE=%llu", static_cast<unsigned long long>(t.queue_depth),
      "GEARBOX_QUEUE_MAX=%llu", static_cast<unsigned long long>(f.queue_max),
      "GEARBOX_ACCEPT_QUEUE=%lld", static_cast<long long>(f.accept_queue),
      "GEARBOX_ACCEPT_QUEUE_MAX=%lld",
      static_cast<long long>(f.accept_queue_max), "GEARBOX_S2XX=%llu",
      static_cast<unsigned long long>(t.status_class[2]), "GEARBOX_S4XX=%llu",
      static_cast<unsigned long long>(t.status_class[4]), "GEARBOX_S5XX=%llu",
      static_cast<unsigned long long>(t.status_class[5]),
      "GEARBOX_REJECTED=%llu", static_cast<unsigned long long>(t.rejected),
      "GEARBOX_TIMEOUTS=%llu", static_cast<unsigned long long>(t.timeouts()),
      "GEARBOX_REQUEST_TIMEOUTS=%llu",
      static_cast<unsigned long long>(t.request_timeouts),
      "GEARBOX_PARKED=%llu", static_cast<unsigned long long>(t.parked),
      "GEARBOX_LOOP_STALLS=%llu",
      static_cast<unsigned long long>(t.loop_stalls), nullptr);
}

}  // namespace

StatsReporter::StatsReporter(const Listeners& listeners)
    : listeners_(listeners), journald_(StderrIsJournal()) {}

void StatsReporter::Sample() {
  int64_t total = 0;
  for (const Listener& l : listeners_) {
    int64_t n = probe_.Length(l.fd);
    if (n > 0) total += n;
  }
  accept_queue_ = total;
  accept_queue_max_ = std::max(accept_queue_max_, total);
}

std::string StatsReporter::Report(std::string_view model, int generation,
                                  StatsRegion& stats, int workers) {
  auto now = std::chrono::steady_clock::now();
  StatsRegion::Totals t = stats.Sum();
  if (last_region_ != &stats) {  // a new generation: its counters start at zero
    last_region_ = &stats;
    last_requests_ = 0;
    last_service_ = HistogramSnapshot{};
    last_queue_wait_ = HistogramSnapshot{};
  }
  double secs = std::chrono::duration<double>(now - last_time_).count();
  if (secs <= 0) secs = 1;
  const uint64_t interval_requests = t.requests - last_requests_;
  const double rps = static_cast<double>(interval_requests) / secs;
  HistogramSnapshot service = t.service.Since(last_service_);
  HistogramSnapshot qwait = t.queue_wait.Since(last_queue_wait_);
  const uint64_t queue_max = stats.TakeQueueHigh();
  const std::string line = fmt::format(
      "model={} gen={} rps={:.1f} requests={} p50_ms={:.3f} p90_ms={:.3f} "
      "p99_ms={:.3f} max_ms={:.3f} qwait_p50_ms={:.3f} qwait_p99_ms={:.3f} "
      "inflight={} conns={} busy={} workers={} workers_min={} workers_max={} "
      "queue={} queue_max={} "
      "accept_queue={} accept_queue_max={} s2xx={} s4xx={} s5xx={} rejected={} "
      "bad_input={} timeouts={} request_timeouts={} bytes_in={} bytes_out={} "
      "parked={} loop_stalls={}",
      model, generation, rps, t.requests, Ms(service.Percentile(0.5)),
      Ms(service.Percentile(0.9)), Ms(service.Percentile(0.99)),
      Ms(service.Max()), Ms(qwait.Percentile(0.5)), Ms(qwait.Percentile(0.99)),
      t.inflight, t.open(), t.busy, workers, t.workers_min, t.workers_max,
      t.queue_depth, queue_max, accept_queue_, accept_queue_max_,
      t.status_class[2], t.status_class[4], t.status_class[5], t.rejected,
      t.bad_input, t.timeouts(), t.request_timeouts, t.bytes_in, t.bytes_out,
      t.parked, t.loop_stalls);
  // Under systemd the line goes to the journal with structured fields, so
  // `journalctl -u gearbox -o json` has GEARBOX_RPS= etc. (stderr would
  // duplicate it); if the journal refuses it, stderr still gets the line.
  int journal_rc = -1;
  if (journald_) {
    journal_rc = SendStatsToJournal(
        line, model, generation, t,
        {rps, service, queue_max, workers, accept_queue_, accept_queue_max_});
  }
  if (journal_rc < 0) LogInfo("stats", "{}", line);
  last_requests_ = t.requests;
  last_service_ = t.service;
  last_queue_wait_ = t.queue_wait;
  last_time_ = now;
  accept_queue_max_ = accept_queue_;
  return fmt::format(
      "{} gen {}: {:.0f} req/s, p99 {:.1f} ms, {} in flight, {}/{} busy, "
      "{} conns, queue {}, {} requests, {} rejected (503)",
      model, generation, rps, Ms(service.Percentile(0.99)), t.inflight, t.busy,
      workers, t.open(), t.queue_depth, t.requests, t.rejected);
}

}  // namespace gearbox
