// The master forks `workers` children (and the head guard process, for slow
// request heads) after the listening sockets exist and does no request work
// itself: it reaps, respawns and stops them (the children's table is
// prefork_workers.h: crash-storm backoff, stuck requests cut off).
#include "models/prefork/prefork_model.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "daemon/logging.h"
#include "daemon/metrics/accept_queue.h"
#include "models/pool_scaler.h"
#include "models/prefork/head_guard.h"
#include "models/prefork/prefork_workers.h"

namespace gearbox {
namespace {

using Clock = std::chrono::steady_clock;

class PreforkModel final : public Model {
 public:
  ~PreforkModel() override {
    if (started_) Drain(Clock::now());
  }

  // One slot per child there may be (max_workers), then the head guard's.
  size_t SlotsNeeded(const ModelConfig& config) const override {
    return static_cast<size_t>(Limits(config).max) + 1;
  }

  int TotalWorkers() const override { return current_.load(); }

  static PoolLimits Limits(const ModelConfig& c) {
    return c.foreground ? PoolLimits{1, 1, 1, {}} : c.prefork.Limits();
  }

  Status Start(const ModelContext& ctx) override {
    ctx_ = ctx;
    const PoolLimits limits = Limits(ctx.config);
    workers_ =
        std::make_unique<PreforkWorkers>(ctx_, static_cast<size_t>(limits.max));
    scaler_ = std::make_unique<PoolScaler>(limits, "prefork", ctx.generation,
                                           Clock::now());
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
    workers_->set_guard(guard_.get());
    // Before the first child serves: its /status shows them from the first
    // request on.
    ctx_.stats->SetWorkerBounds(limits.min, limits.min, limits.max);
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) != 0)
      return Status::Error(std::string("pipe2: ") + strerror(errno));
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < static_cast<size_t>(limits.min); ++i) {
      if (!workers_->Start(i, ready[1])) {
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
    PublishGauges();
    LogInfo("model_started",
            "model=prefork gen={} workers={} max_workers={} max_requests={} "
            "head_guard={}",
            ctx.generation, workers_->wanted(), limits.max,
            ctx.config.prefork.max_requests, guard_ ? "on" : "off");
    return Status::Ok();
  }

  void Maintain() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!workers_) return;
    const auto now = Clock::now();
    // Even while draining: a stuck request must not hold the drain to its
    // deadline.
    workers_->KillStuck(now);
    if (draining_) return;  // Drain() reaps its own children
    workers_->ReapAndRespawn(now);
    workers_->TrackActivity(now);
    Scale(now);
    PublishGauges();
    if (!guard_) return;
    int status = 0;
    if (guard_pid_ > 0 && waitpid(guard_pid_, &status, WNOHANG) == guard_pid_) {
      // The heads it held are lost (their clients see a close); the channels
      // live in the master, so a new guard takes over the queued ones.
      LogWarn("head_guard_died", "model=prefork gen={} pid={} {} held={}",
              ctx_.generation, guard_pid_, DescribeChildStatus(status),
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
      workers_->SignalAll(SIGKILL);
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
      if (workers_->ReapForDrain()) alive = true;
      if (!alive) break;
      if (Clock::now() >= deadline) {
        if (guard_pid_ > 0) {
          LogWarn("head_guard_killed",
                  "model=prefork pid={} reason=graceful_timeout", guard_pid_);
          kill(guard_pid_, SIGKILL);
          waitpid(guard_pid_, nullptr, 0);
          OnGuardGone();
        }
        workers_->KillAll("graceful_timeout");
        break;
      }
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      lock.lock();
    }
    LogInfo("model_drained",
            "model=prefork gen={} spawned={} exited={} recycled={}",
            ctx_.generation, workers_->spawned(), workers_->exited(),
            workers_->recycled());
  }

 private:
  // Caller holds mu_. SIGTERM makes a child stop accepting before it handles
  // another connection (it checks the flag between poll() and accept()), finish
  // the connection in hand and exit; no respawns from now on.
  void StopAcceptingLocked() {
    if (draining_) return;
    draining_ = true;
    if (workers_) workers_->SignalAll(SIGTERM);
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

  // Caller holds mu_. Grows while every child holds a connection and
  // clients wait in the kernel's accept queue; retires children idle for
  // idle_worker_timeout. No growth during a crash storm's backoff: more
  // children would only crash more.
  void Scale(Clock::time_point now) {
    const PoolLimits& limits = scaler_->limits();
    const int current = workers_->wanted();
    const int busy = workers_->busy();
    const int64_t waiting = AcceptQueued();
    int n = workers_->storming()
                ? 0
                : scaler_->ToGrow(now, current, busy, WorkWaits(waiting));
    if (n > 0 && (n = workers_->Grow(n)) > 0) {
      scaler_->Changed(current, current + n, "busy",
                       fmt::format("busy={} accept_queue={}", busy, waiting));
    }
    Clock::duration idle{};
    const int retired =
        workers_->RetireIdle(now, limits.min, limits.idle_timeout, &idle);
    if (retired > 0) {
      const int before = workers_->wanted() + retired;
      scaler_->Changed(
          before, before - retired, "idle",
          fmt::format(
              "idle_ms={}",
              std::chrono::duration_cast<std::chrono::milliseconds>(idle)
                  .count()));
    }
  }

  // The growth signal: clients the kernel holds for a child (the throughput
  // issue may point it elsewhere).
  static bool WorkWaits(int64_t accept_queued) { return accept_queued > 0; }

  // Connections completed by the kernel and not yet accepted, on every
  // listener (TCP_INFO / sock_diag: one syscall each).
  int64_t AcceptQueued() {
    int64_t total = 0;
    for (const Listener& l : *ctx_.listeners) {
      const int64_t n = probe_.Length(l.fd);
      if (n > 0) total += n;
    }
    return total;
  }

  void PublishGauges() {
    const PoolLimits& limits = scaler_->limits();
    current_.store(workers_->wanted());
    ctx_.stats->SetWorkerBounds(current_.load(), limits.min, limits.max);
  }

  WorkerStats& GuardStats() { return ctx_.stats->Slot(workers_->slots()); }

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

  ModelContext ctx_;
  std::mutex mu_;
  std::unique_ptr<PreforkWorkers> workers_;
  std::unique_ptr<PoolScaler> scaler_;
  AcceptQueueProbe probe_;
  std::atomic<int> current_{0};       // wanted children, for TotalWorkers()
  std::unique_ptr<HeadGuard> guard_;  // null when it could not be set up
  pid_t guard_pid_ = 0;               // 0 = not running
  Clock::time_point guard_respawn_at_{};
  bool started_ = false;
  bool draining_ = false;
};

}  // namespace

std::unique_ptr<Model> MakePreforkModel() {
  return std::make_unique<PreforkModel>();
}

int PreforkMaxWorkers(const ModelConfig& config) {
  return PreforkModel::Limits(config).max;
}

}  // namespace gearbox
