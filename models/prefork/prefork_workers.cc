#include "models/prefork/prefork_workers.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/clock.h"
#include "daemon/logging.h"
#include "models/prefork/prefork_child.h"
#include "models/prefork/prefork_model.h"
#include "models/prefork/request_kill.h"

namespace gearbox {
namespace {

constexpr int kStormDeaths = 10;  // this many unexpected deaths ...
constexpr auto kStormWindow =
    std::chrono::seconds(10);  // ... within this window
constexpr auto kMaxBackoff = std::chrono::seconds(30);

int64_t MsSince(uint64_t start_us) {
  const uint64_t now = NowMicros();
  return now > start_us ? static_cast<int64_t>((now - start_us) / 1000) : 0;
}

}  // namespace

std::string DescribeChildStatus(int status) {
  if (WIFEXITED(status)) {
    switch (WEXITSTATUS(status)) {
      case kChildDrained:
        return "exit=drained";
      case kChildRecycled:
        return "exit=recycled";
      case kChildSetupFailed:
        return "exit=setup_failed";
      case kChildRequestKilled:
        return "exit=request_killed";
      case kChildRetired:
        return "exit=retired";
      default:
        return "exit=" + std::to_string(WEXITSTATUS(status));
    }
  }
  if (WIFSIGNALED(status))
    return std::string("signal=") + strsignal(WTERMSIG(status));
  return "status=" + std::to_string(status);
}

PreforkWorkers::PreforkWorkers(const ModelContext& ctx, size_t slots)
    : ctx_(ctx), children_(slots) {}

int PreforkWorkers::wanted() const {
  int n = 0;
  for (const Child& c : children_) n += c.wanted ? 1 : 0;
  return n;
}

int PreforkWorkers::busy() const {
  int n = 0;
  for (size_t i = 0; i < children_.size(); ++i) {
    const Child& c = children_[i];
    if (c.wanted && c.pid > 0 && ctx_.stats->Slot(i).open_conns.load() != 0)
      ++n;
  }
  return n;
}

// O(slots) reads of the shared stats, ten times a second.
void PreforkWorkers::TrackActivity(Clock::time_point now) {
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    if (c.pid <= 0) continue;
    const WorkerStats& s = Slot(i);
    // A handed-back connection is counted in neither, but holds the child
    // (open_conns) while it is served.
    const uint64_t activity = s.accepted.load() + s.requests.load();
    if (activity != c.activity || s.open_conns.load() != 0) {
      c.activity = activity;
      c.active_at = now;
    }
  }
}

int PreforkWorkers::Grow(int n) {
  int started = 0;
  for (size_t i = 0; i < children_.size() && started < n; ++i) {
    Child& c = children_[i];
    if (c.wanted || c.pid > 0) continue;  // in use, or still retiring
    if (Start(i, -1)) ++started;
  }
  return started;
}

int PreforkWorkers::RetireIdle(Clock::time_point now, int min,
                               Clock::duration idle_timeout,
                               Clock::duration* longest_idle) {
  int wanted_now = wanted();
  int retired = 0;
  *longest_idle = Clock::duration::zero();
  for (size_t i = children_.size(); i-- > 0 && wanted_now > min;) {
    Child& c = children_[i];
    if (!c.wanted || c.pid <= 0 || now - c.active_at < idle_timeout) continue;
    if (Slot(i).open_conns.load() != 0) continue;
    c.wanted = false;
    kill(c.pid, SIGUSR1);
    *longest_idle = std::max(*longest_idle, now - c.active_at);
    --wanted_now;
    ++retired;
  }
  return retired;
}

bool PreforkWorkers::Start(size_t index, int ready_fd) {
  children_[index].wanted = true;
  return Spawn(index, ready_fd);
}

bool PreforkWorkers::Spawn(size_t index, int ready_fd) {
  int64_t max_requests = ctx_.config.prefork.max_requests;
  if (max_requests > 0) {
    // Up to +10% jitter so children started together do not recycle together.
    std::uniform_int_distribution<int64_t> jitter(0, max_requests / 10);
    max_requests += jitter(rng_);
  }
  pid_t pid = fork();
  if (pid < 0) {
    LogError("fork_failed", "model=prefork error={}",
             LogQuote(strerror(errno)));
    children_[index].respawn_at = Clock::now() + std::chrono::seconds(1);
    return false;
  }
  if (pid == 0) {
    PreforkChildArgs args;
    args.context = &ctx_;
    args.slot = static_cast<int>(index);
    args.max_requests = max_requests;
    args.ready_fd = ready_fd;
    args.workers = static_cast<int>(children_.size());
    if (guard_) {
      args.park_fd = guard_->park_fd();
      args.unpark_fd = guard_->unpark_fd();
      args.handoff_capacity = guard_->capacity();
    }
    RunPreforkChild(args);
  }
  children_[index].pid = pid;
  children_[index].killing_start_us = 0;
  children_[index].activity = 0;
  children_[index].active_at = Clock::now();
  ++spawned_;
  LogDebug("child_spawned", "model=prefork gen={} pid={} slot={}",
           ctx_.generation, pid, index);
  return true;
}

void PreforkWorkers::ReapAndRespawn(Clock::time_point now) {
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    if (c.pid > 0) {
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) != c.pid) continue;
      OnExit(i, status, now);
    }
    if (c.wanted && c.pid == 0 && !draining_ && now >= c.respawn_at)
      Spawn(i, -1);
  }
}

void PreforkWorkers::OnExit(size_t index, int status, Clock::time_point now) {
  Child& c = children_[index];
  ++exited_;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const bool killed_by_us = c.killing_start_us != 0;
  // Whatever it held is gone with it: not a busy or free sibling any more.
  WorkerStats& s = Slot(index);
  s.busy.store(0);
  s.inflight.store(0);
  s.current_start_us.store(0);
  s.open_conns.store(0);
  s.idle_held.store(0);
  s.pid.store(0);
  const pid_t pid = c.pid;
  c.pid = 0;
  c.killing_start_us = 0;
  c.respawn_at = now;
  if (!c.wanted) {
    // Retired (or killed while retiring): its slot is free.
    LogDebug("child_retired", "model=prefork gen={} pid={} {}", ctx_.generation,
             pid, DescribeChildStatus(status));
    return;
  }
  if (code == kChildRecycled) {
    ++recycled_;
    LogInfo("child_recycled", "model=prefork gen={} pid={}", ctx_.generation,
            pid);
    return;
  }
  if (code == kChildRequestKilled || killed_by_us) {
    LogInfo("child_replaced",
            "model=prefork gen={} pid={} {} reason=request_killed",
            ctx_.generation, pid, DescribeChildStatus(status));
    return;
  }
  // An unexpected death: its in-flight request (if any) is lost; replace it.
  LogWarn("child_died", "model=prefork gen={} pid={} {}", ctx_.generation, pid,
          DescribeChildStatus(status));
  NoteCrash(c, now);
}

void PreforkWorkers::NoteCrash(Child& c, Clock::time_point now) {
  deaths_.push_back(now);
  while (!deaths_.empty() && now - deaths_.front() > kStormWindow)
    deaths_.pop_front();
  if (static_cast<int>(deaths_.size()) < kStormDeaths) {
    backoff_ = Clock::duration::zero();
    return;
  }
  backoff_ =
      backoff_ == Clock::duration::zero()
          ? std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(1))
          : std::min<Clock::duration>(backoff_ * 2, kMaxBackoff);
  LogError(
      "crash_storm",
      "model=prefork gen={} deaths={} window_s={} respawn_delay_ms={}",
      ctx_.generation, deaths_.size(), kStormWindow.count(),
      std::chrono::duration_cast<std::chrono::milliseconds>(backoff_).count());
  c.respawn_at = now + backoff_;
}

// O(slots) scan of the shared stats; slots <= 1024, ten times a second.
void PreforkWorkers::KillStuck(Clock::time_point now) {
  const uint64_t now_us = NowMicros();
  for (size_t i = 0; i < children_.size(); ++i) {
    Child& c = children_[i];
    if (c.pid <= 0) continue;
    const WorkerStats& s = Slot(i);
    const uint64_t start = StuckRequestStart(s, now_us, kStuckGrace);
    if (start == 0) continue;
    if (c.killing_start_us == start) {
      if (now < c.kill_by) continue;
      LogWarn("child_killed",
              "model=prefork gen={} pid={} reason=request_stuck",
              ctx_.generation, c.pid);
      kill(c.pid, SIGKILL);
      c.kill_by = Clock::time_point::max();  // reaped as usual
      continue;
    }
    const uint64_t deadline = s.current_deadline_us.load();
    LogWarn("request_killed",
            "model=prefork gen={} pid={} slot={} path={} age_ms={} "
            "timeout_ms={}",
            ctx_.generation, c.pid, i, LogQuote(s.CurrentPath()),
            MsSince(start), deadline > start ? (deadline - start) / 1000 : 0);
    c.killing_start_us = start;
    c.kill_by = now + kKillEscalation;
    if (!SendRequestKill(c.pid, start)) kill(c.pid, SIGKILL);
  }
}

void PreforkWorkers::SignalAll(int sig) {
  draining_ = true;
  for (Child& c : children_)
    if (c.pid > 0) kill(c.pid, sig);
}

bool PreforkWorkers::ReapForDrain() {
  bool alive = false;
  for (Child& c : children_) {
    if (c.pid <= 0) continue;
    int status;
    if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
      LogDebug("child_exited", "model=prefork pid={} {}", c.pid,
               DescribeChildStatus(status));
      c.pid = 0;
    } else {
      alive = true;
    }
  }
  return alive;
}

void PreforkWorkers::KillAll(const char* reason) {
  for (Child& c : children_) {
    if (c.pid <= 0) continue;
    LogWarn("child_killed", "model=prefork pid={} reason={}", c.pid, reason);
    kill(c.pid, SIGKILL);
    waitpid(c.pid, nullptr, 0);
    c.pid = 0;
  }
}

}  // namespace gearbox
