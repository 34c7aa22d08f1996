// The master forks `workers` children (and the head guard process, for slow
// request heads) after the listening sockets exist and does no request work
// itself: it reaps, respawns and stops them. A child
// that dies is replaced at once; a crash storm (many deaths in a short window)
// slows respawning down with exponential backoff instead of spinning, and says
// so loudly.
#include "models/prefork_model.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "daemon/logging.h"
#include "models/head_guard.h"
#include "models/prefork_child.h"

namespace gearbox {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kStormDeaths = 10;  // this many unexpected deaths ...
constexpr auto kStormWindow =
    std::chrono::seconds(10);  // ... within this window
constexpr auto kMaxBackoff = std::chrono::seconds(30);

struct Child {
  pid_t pid = 0;  // 0 = not running
  Clock::time_point respawn_at{};
};

std::string DescribeStatus(int status) {
  if (WIFEXITED(status)) {
    switch (WEXITSTATUS(status)) {
      case kChildDrained:
        return "exit=drained";
      case kChildRecycled:
        return "exit=recycled";
      case kChildSetupFailed:
        return "exit=setup_failed";
      default:
        return "exit=" + std::to_string(WEXITSTATUS(status));
    }
  }
  if (WIFSIGNALED(status))
    return std::string("signal=") + strsignal(WTERMSIG(status));
  return "status=" + std::to_string(status);
}

class PreforkModel final : public Model {
 public:
  ~PreforkModel() override {
    if (started_) Drain(Clock::now());
  }

  // One slot per child, then the head guard's.
  size_t SlotsNeeded(const ModelConfig& config) const override {
    return static_cast<size_t>(Workers(config)) + 1;
  }

  int TotalWorkers() const override { return Workers(ctx_.config); }

  Status Start(const ModelContext& ctx) override {
    ctx_ = ctx;
    children_.resize(static_cast<size_t>(Workers(ctx.config)));
    // From here on Drain() (and the destructor) stops whatever was started,
    // even if Start() fails half way.
    started_ = true;
    std::string guard_error;
    guard_ = HeadGuard::Create(*ctx.listeners, ctx.config.limits, &guard_error);
    if (guard_ && !SpawnGuard()) {
      guard_error = std::string("fork: ") + strerror(errno);
      guard_.reset();
    }
    if (!guard_) {
      // Still a working prefork, as Apache's: slow heads then pin a child
      // each for up to header_timeout.
      LogWarn("head_guard_off", "model=prefork gen={} error={}", ctx.generation,
              LogQuote(guard_error));
    }
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0)
      return Status::Error(std::string("pipe2: ") + strerror(errno));
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < children_.size(); ++i) {
      if (!Spawn(i, ready[1])) {
        close(ready[0]);
        close(ready[1]);
        return Status::Error(std::string("fork: ") + strerror(errno));
      }
    }
    close(ready[1]);
    // READY=1 must mean "serving": wait for the first child to be in its accept
    // loop (the listening sockets already queue connections meanwhile).
    pollfd p{ready[0], POLLIN, 0};
    int n = poll(&p, 1, 10000);
    char byte;
    bool ok = n == 1 && read(ready[0], &byte, 1) == 1;
    close(ready[0]);
    if (!ok) return Status::Error("prefork: no child became ready within 10 s");
    LogInfo("model_started",
            "model=prefork gen={} workers={} max_requests={} head_guard={}",
            ctx.generation, children_.size(), ctx.config.prefork.max_requests,
            guard_ ? "on" : "off");
    return Status::Ok();
  }

  void Maintain() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (draining_) return;  // Drain() reaps its own children
    const auto now = Clock::now();
    for (size_t i = 0; i < children_.size(); ++i) {
      Child& c = children_[i];
      if (c.pid > 0) {
        int status = 0;
        pid_t r = waitpid(c.pid, &status, WNOHANG);
        if (r != c.pid) continue;
        OnChildExit(i, status, now);
      }
      if (c.pid == 0 && now >= c.respawn_at) Spawn(i, -1);
    }
    if (!guard_) return;
    int status = 0;
    if (guard_pid_ > 0 && waitpid(guard_pid_, &status, WNOHANG) == guard_pid_) {
      // The heads it held are lost (their clients see a close); the channels
      // live in the master, so a new guard takes over the queued ones.
      LogWarn("head_guard_died", "model=prefork gen={} pid={} {} held={}",
              ctx_.generation, guard_pid_, DescribeStatus(status),
              GuardStats().open_conns.load());
      OnGuardGone();
    }
    if (guard_pid_ == 0 && now >= guard_respawn_at_) SpawnGuard();
  }

  void StopAccepting() override {
    std::lock_guard<std::mutex> lock(mu_);
    StopAcceptingLocked();
  }

  void Drain(Deadline deadline) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!started_) return;
    StopAcceptingLocked();
    started_ = false;
    if (Clock::now() >= deadline) {
      if (guard_pid_ > 0) kill(guard_pid_, SIGKILL);
      for (Child& c : children_)
        if (c.pid > 0) kill(c.pid, SIGKILL);
    }
    for (;;) {
      // The guard exits once the children have stopped parking and it has
      // dealt with every head it held; the children exit once it has.
      bool alive = false;
      if (guard_pid_ > 0) {
        if (waitpid(guard_pid_, nullptr, WNOHANG) == guard_pid_) {
          OnGuardGone();  // held nothing, unless it was killed
        } else {
          alive = true;
        }
      }
      for (Child& c : children_) {
        if (c.pid <= 0) continue;
        int status;
        if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
          LogDebug("child_exited", "model=prefork pid={} {}", c.pid,
                   DescribeStatus(status));
          c.pid = 0;
        } else {
          alive = true;
        }
      }
      if (!alive) break;
      if (Clock::now() >= deadline) {
        if (guard_pid_ > 0) {
          LogWarn("head_guard_killed",
                  "model=prefork pid={} reason=graceful_timeout", guard_pid_);
          kill(guard_pid_, SIGKILL);
          waitpid(guard_pid_, nullptr, 0);
          OnGuardGone();
        }
        for (Child& c : children_) {
          if (c.pid <= 0) continue;
          LogWarn("child_killed",
                  "model=prefork pid={} reason=graceful_timeout", c.pid);
          kill(c.pid, SIGKILL);
          waitpid(c.pid, nullptr, 0);
          c.pid = 0;
        }
        break;
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      lock.lock();
    }
    LogInfo("model_drained",
            "model=prefork gen={} spawned={} exited={} recycled={}",
            ctx_.generation, spawned_, exited_, recycled_);
  }

 private:
  static int Workers(const ModelConfig& c) {
    return c.foreground ? 1 : c.prefork.workers;
  }

  // Caller holds mu_. SIGTERM makes a child stop accepting before it handles
  // another connection (it checks the flag between poll() and accept()), finish
  // the connection in hand and exit; no respawns from now on.
  void StopAcceptingLocked() {
    if (draining_) return;
    draining_ = true;
    for (Child& c : children_)
      if (c.pid > 0) kill(c.pid, SIGTERM);
    if (guard_) {
      // Heads parked while no guard runs (it died and its successor is not
      // due yet) wait in the park channel; once the master drops its copy,
      // only a running guard can still answer them.
      int status = 0;
      if (guard_pid_ > 0 && waitpid(guard_pid_, &status, WNOHANG) == guard_pid_)
        OnGuardGone();
      if (guard_pid_ == 0) SpawnGuard();
      guard_->CloseForDrain();
    }
  }

  WorkerStats& GuardStats() { return ctx_.stats->Slot(children_.size()); }

  // The guard process is gone (reaped): the connections it held were closed
  // by the kernel with it; count them (they were counted accepted by a child).
  // Caller holds mu_.
  void OnGuardGone() {
    WorkerStats& g = GuardStats();
    const uint64_t held = g.open_conns.load();
    for (uint64_t i = 0; i < held; ++i) g.CountClose(CloseReason::kError);
    g.open_conns.store(0);
    g.pid.store(0);
    guard_pid_ = 0;
  }

  // Caller holds mu_ (or is Start()). At most one guard a second: one that
  // keeps dying must not turn the master into a fork loop.
  bool SpawnGuard() {
    guard_respawn_at_ = Clock::now() + std::chrono::seconds(1);
    pid_t pid = guard_->Fork(GuardStats());
    if (pid < 0) {
      LogError("fork_failed", "model=prefork process=head_guard error={}",
               LogQuote(strerror(errno)));
      return false;
    }
    guard_pid_ = pid;
    LogDebug("head_guard_spawned", "model=prefork gen={} pid={}",
             ctx_.generation, pid);
    return true;
  }

  // Caller holds mu_.
  bool Spawn(size_t index, int ready_fd) {
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
    ++spawned_;
    LogDebug("child_spawned", "model=prefork gen={} pid={} slot={}",
             ctx_.generation, pid, index);
    return true;
  }

  // Caller holds mu_.
  void OnChildExit(size_t index, int status, Clock::time_point now) {
    Child& c = children_[index];
    ++exited_;
    const bool recycled =
        WIFEXITED(status) && WEXITSTATUS(status) == kChildRecycled;
    if (recycled) {
      ++recycled_;
      LogInfo("child_recycled", "model=prefork gen={} pid={}", ctx_.generation,
              c.pid);
      c.pid = 0;
      c.respawn_at = now;
      return;
    }
    // An unexpected death: its in-flight request (if any) is lost; replace it.
    LogWarn("child_died", "model=prefork gen={} pid={} {}", ctx_.generation,
            c.pid, DescribeStatus(status));
    ctx_.stats->Slot(index).busy.store(0);
    ctx_.stats->Slot(index).open_conns.store(0);
    ctx_.stats->Slot(index).pid.store(0);  // not a free sibling while dead
    c.pid = 0;
    deaths_.push_back(now);
    while (!deaths_.empty() && now - deaths_.front() > kStormWindow)
      deaths_.pop_front();
    if (static_cast<int>(deaths_.size()) >= kStormDeaths) {
      backoff_ = backoff_ == Clock::duration::zero()
                     ? std::chrono::duration_cast<Clock::duration>(
                           std::chrono::seconds(1))
                     : std::min<Clock::duration>(backoff_ * 2, kMaxBackoff);
      LogError("crash_storm",
               "model=prefork gen={} deaths={} window_s={} respawn_delay_ms={}",
               ctx_.generation, deaths_.size(), kStormWindow.count(),
               std::chrono::duration_cast<std::chrono::milliseconds>(backoff_)
                   .count());
      c.respawn_at = now + backoff_;
    } else {
      backoff_ = Clock::duration::zero();
      c.respawn_at = now;
    }
  }

  ModelContext ctx_;
  std::mutex mu_;
  std::vector<Child> children_;
  std::unique_ptr<HeadGuard> guard_;  // null when it could not be set up
  pid_t guard_pid_ = 0;               // 0 = not running
  Clock::time_point guard_respawn_at_{};
  std::deque<Clock::time_point> deaths_;
  Clock::duration backoff_{};
  bool started_ = false;
  bool draining_ = false;
  uint64_t spawned_ = 0, exited_ = 0, recycled_ = 0;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace

std::unique_ptr<Model> MakePreforkModel() {
  return std::make_unique<PreforkModel>();
}

}  // namespace gearbox
