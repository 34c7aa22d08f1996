#include "tests/integration/systemd/load_clients.h"

#include <time.h>

#include <cstdio>

namespace gearbox::testing {
namespace {

using Failure = UnixResponse::Failure;

constexpr Millis kIo{5000};

int64_t Ms(SteadyClock::duration d) {
  return std::chrono::duration_cast<Millis>(d).count();
}

// Between two requests of a client: the load's rate (at most one request per
// `pause`), set by the test. Nothing is waited for; the next request is the
// next thing to do.
void Pace(const LoadLimits& lim) { std::this_thread::sleep_for(lim.pause); }

std::string Target(int i) { return i % 4 == 3 ? "/sleep?ms=20" : "/hello"; }

// One new connection (Connection: close) per request: every one must be 200.
void FreshClient(const std::string& path, int id, const LoadLimits& lim,
                 LoadResult& out, SteadyClock::time_point t0) {
  const auto end = SteadyClock::now() + lim.max_time;
  for (int i = 0;
       i < lim.max_requests && !lim.stop->load() && SteadyClock::now() < end;
       ++i) {
    UnixResponse r = UnixExchange(path, Target(i), kIo);
    if (Good(r)) {
      out.ok.fetch_add(1);
    } else {
      out.Fail(t0, "fresh#" + std::to_string(id) + " " + Target(i),
               Describe(r));
    }
    Pace(lim);
  }
}

// Keep-alive: reuses its connection; when a *reused* connection turns out to
// have been closed while idle (EOF / reset / EPIPE before any response byte)
// it reconnects and resends once, as nginx does towards an upstream.
void KeepAliveClient(const std::string& path, int id, const LoadLimits& lim,
                     LoadResult& out, SteadyClock::time_point t0) {
  const auto end = SteadyClock::now() + lim.max_time;
  UnixConnection conn;
  const std::string who = "keepalive#" + std::to_string(id);
  for (int i = 0;
       i < lim.max_requests && !lim.stop->load() && SteadyClock::now() < end;
       ++i) {
    const std::string request = UnixGet(Target(i));
    if (!conn.ok()) {
      conn = UnixConnection::Open(path, kIo);
      out.reconnects.fetch_add(1);
      if (!conn.ok()) {
        out.Fail(t0, who, "connect: " + conn.error());
        Pace(lim);
        continue;
      }
    }
    const bool reused = conn.used() > 0;
    UnixResponse r = conn.RoundTrip(request, kIo);
    if (!r.ok() && reused && r.failure == Failure::kClosedBeforeAny) {
      out.retried.fetch_add(1);
      conn = UnixConnection::Open(path, kIo);
      out.reconnects.fetch_add(1);
      r = conn.ok()
              ? conn.RoundTrip(request, kIo)
              : UnixResponse{Failure::kConnect, "connect: " + conn.error()};
      if (!Good(r)) {
        out.Fail(t0, who + " " + Target(i), "retry failed: " + Describe(r));
        conn.Close();
      } else {
        out.ok.fetch_add(1);
      }
    } else if (Good(r)) {
      out.ok.fetch_add(1);
    } else {
      out.Fail(t0, who + " " + Target(i),
               std::string(reused ? "reused" : "fresh") +
                   " connection: " + Describe(r));
      conn.Close();
    }
    Pace(lim);
  }
}

}  // namespace

void LoadResult::Fail(SteadyClock::time_point t0, const std::string& who,
                      const std::string& what) {
  failed.fetch_add(1);
  std::lock_guard<std::mutex> lock(mu_);
  if (failures_.size() < 20)
    failures_.push_back("+" + std::to_string(Ms(SteadyClock::now() - t0)) +
                        "ms (" + WallClock() + ") " + who + ": " + what);
}

std::string LoadResult::Failures() {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& f : failures_) out += "  " + f + "\n";
  return out;
}

bool Good(const UnixResponse& r) { return r.ok() && r.status == 200; }

std::string Describe(const UnixResponse& r) {
  if (!r.ok()) return r.error;
  return "status " + std::to_string(r.status) + " body " + r.body.substr(0, 80);
}

std::string WallClock() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  char buf[32];
  snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%03ldZ", t.tm_hour, t.tm_min,
           t.tm_sec, ts.tv_nsec / 1000000);
  return buf;
}

void RunLoad(const std::string& path, int fresh, int keepalive,
             const LoadLimits& limits, LoadResult& out,
             std::vector<std::thread>& threads, SteadyClock::time_point t0) {
  for (int i = 0; i < fresh; ++i)
    threads.emplace_back([&path, &limits, &out, t0, i] {
      FreshClient(path, i, limits, out, t0);
    });
  for (int i = 0; i < keepalive; ++i)
    threads.emplace_back([&path, &limits, &out, t0, i] {
      KeepAliveClient(path, i, limits, out, t0);
    });
}

}  // namespace gearbox::testing
