// Design (leader/follower, as Apache event and ACE; the queue as memcached):
//  - ConnectionPoller owns accept() and the parked connections' deadlines.
//  - ReadyQueue is where a worker takes its next connection: a new one the
//    poller queued, or a parked one (idle keep-alive, slow mid-request) that
//    epoll reports readable to that worker. The worker serves it with
//    blocking I/O until it would wait for bytes, then parks it itself.
//  - A full queue is answered at once with 503 + Retry-After + close.
//  - This file wires them and the worker threads, and runs the drain. A
//    thread whose request is stuck past its deadline is reported and, up to
//    max_threads, a replacement keeps the pool's capacity.
#include "models/threadpool/thread_pool_model.h"

#include <sys/socket.h>

#include <algorithm>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "daemon/clock.h"
#include "daemon/connection/pending_spares.h"
#include "daemon/connection/read_blocks.h"
#include "daemon/logging.h"
#include "models/pool_scaler.h"
#include "models/stuck_request.h"
#include "models/threadpool/connection_poller.h"
#include "models/threadpool/interruptible_sleeper.h"
#include "models/threadpool/park_when_idle.h"
#include "models/threadpool/pooled_connection.h"
#include "models/threadpool/ready_queue.h"

namespace gearbox {
namespace {

// One worker thread's state.
struct Worker {
  InterruptibleSleeper sleeper;
  std::atomic<int> current_fd{-1};  // unblocked by a forced stop
  std::atomic<bool> exited{false};  // its loop returned: join it
  std::thread thread;
  uint64_t reported_stuck_us = 0;  // the stuck request last reported
};

class ThreadPoolModel final : public Model {
 public:
  ~ThreadPoolModel() override {
    if (state_ != DrainState::kIdle && state_ != DrainState::kStopped)
      Drain(Clock::now());
  }

  // The poller's slot, then one per thread there may be.
  size_t SlotsNeeded(const ModelConfig& config) const override {
    return 1 + static_cast<size_t>(Limits(config).max);
  }

  int TotalWorkers() const override { return live_.load(); }

  static PoolLimits Limits(const ModelConfig& c) {
    return c.foreground ? PoolLimits{1, 1, 1, {}} : c.threadpool.Limits();
  }

  Status Start(const ModelContext& ctx) override {
    ctx_ = ctx;
    limits_ = Limits(ctx.config);
    scaler_ = std::make_unique<PoolScaler>(limits_, "threadpool",
                                           ctx.generation, Clock::now());
    queue_ = std::make_unique<ReadyQueue>(
        static_cast<size_t>(ctx.config.threadpool.queue), ctx_.stats->Slot(0),
        static_cast<size_t>(limits_.max), Seats(limits_.max));
    poller_ = std::make_unique<ConnectionPoller>(ctx_, *queue_, draining_);
    if (Status s = poller_->Init(); !s.ok()) return s;
    std::lock_guard<std::mutex> lock(mu_);
    workers_.resize(static_cast<size_t>(limits_.max));
    state_ = DrainState::kServing;  // Drain() stops what starts from here
    // Before the first thread serves: /status shows them from the start.
    ctx_.stats->SetWorkerBounds(limits_.min, limits_.min, limits_.max);
    for (int i = 0; i < limits_.min; ++i) {
      if (!AddWorker()) return Status::Error("std::thread: cannot start");
    }
    poller_->StartThread();
    PublishGauges();
    LogInfo("model_started",
            "model=threadpool gen={} threads={} max_threads={} queue={}",
            ctx.generation, limits_.min, limits_.max,
            ctx.config.threadpool.queue);
    return Status::Ok();
  }

  void Maintain() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ != DrainState::kServing && state_ != DrainState::kNotAccepting)
      return;  // stopping: Drain() joins the threads
    JoinExited();
    ReportStuck();
    if (state_ == DrainState::kServing) Scale(Clock::now());
    PublishGauges();
  }

  void StopAccepting() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ != DrainState::kServing) return;
      state_ = DrainState::kNotAccepting;
    }
    draining_.store(true);
    poller_->WaitDrainAcknowledged();
  }

  void Drain(Deadline deadline) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (state_ == DrainState::kIdle || state_ == DrainState::kStopped) return;
    }
    StopAccepting();
    // Finish what is queued, in hand, or parked waiting for a first request
    // or the rest of one.
    const bool finished = queue_->WaitIdle(deadline);
    {
      // From here on no thread is added or joined elsewhere: workers_ is
      // this thread's.
      std::lock_guard<std::mutex> lock(mu_);
      state_ = DrainState::kStopping;
    }
    queue_->Close();
    if (!finished) Abort();
    for (auto& w : workers_)
      if (w) w->thread.join();
    poller_->Stop();
    for (PooledConnection* c : queue_->TakeQueued()) {
      queue_->Forget(c);
      c->conn.Abort(CloseReason::kDrain);
      CloseBlocking(*c);
      delete c;
      poller_->Closed();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_ = DrainState::kStopped;
    }
    LogInfo("model_drained", "model=threadpool gen={}", ctx_.generation);
  }

 private:
  enum class DrainState { kIdle, kServing, kNotAccepting, kStopping, kStopped };

  // About one worker per core waits for events or runs; more would only take
  // turns on the cores, a context switch per request.
  static int Seats(int max_threads) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    return std::clamp(cores, 1, max_threads);
  }

  // Caller holds mu_. Starts a thread in the first free slot; false when
  // none is free or the thread cannot start.
  bool AddWorker() {
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (workers_[i]) continue;
      auto w = std::make_unique<Worker>();
      Worker* raw = w.get();
      try {
        raw->thread = std::thread([this, i, raw] { WorkerLoop(i, *raw); });
      } catch (const std::system_error& e) {
        LogError("thread_start_failed", "model=threadpool error={}",
                 LogQuote(e.what()));
        return false;
      }
      workers_[i] = std::move(w);
      live_.fetch_add(1);
      return true;
    }
    return false;
  }

  // Caller holds mu_. Threads that left their loop (retired) free their slot.
  void JoinExited() {
    for (auto& w : workers_) {
      if (!w || !w->exited.load()) continue;
      w->thread.join();
      w.reset();
    }
  }

  // Caller holds mu_. A thread whose request is past its deadline + grace
  // burns CPU or blocks: it cannot be interrupted safely, so it is reported
  // once per request, and a new thread takes its place up to max_threads.
  // O(max_threads) scan of the stats slots, ten times a second.
  void ReportStuck() {
    const uint64_t now_us = NowMicros();
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker* w = workers_[i].get();
      if (!w) continue;
      const WorkerStats& s = ctx_.stats->Slot(1 + i);
      const uint64_t start = StuckRequestStart(s, now_us, kStuckGrace);
      if (start == 0 || start == w->reported_stuck_us) continue;
      w->reported_stuck_us = start;
      ctx_.stats->CountStuckRequest();
      const bool replaced = live_.load() < limits_.max && AddWorker();
      const uint64_t deadline = s.current_deadline_us.load();
      LogWarn("request_stuck",
              "model=threadpool gen={} thread={} tid={} path={} age_ms={} "
              "timeout_ms={} replacement={} threads={}",
              ctx_.generation, i, s.tid.load(), LogQuote(s.CurrentPath()),
              (now_us - start) / 1000,
              deadline > start ? (deadline - start) / 1000 : 0,
              replaced ? "started" : "none_max_threads", live_.load());
    }
  }

  // Caller holds mu_. Grows while no thread is idle and connections wait in
  // the ready queue; logs the threads that retired themselves since.
  void Scale(Clock::time_point now) {
    const int current = live_.load();
    const int idle = queue_->idle_workers();
    const int waiting = queue_->queued().load(std::memory_order_relaxed);
    const uint64_t ready_waits = queue_->ready_waits();
    const int want =
        scaler_->ToGrow(now, current, current - idle,
                        WorkWaits(waiting, ready_waits - last_ready_waits_));
    last_ready_waits_ = ready_waits;
    int started = 0;
    while (started < want && AddWorker()) ++started;
    if (started > 0) {
      scaler_->Changed(current, current + started, "busy",
                       fmt::format("idle=0 queue={}", waiting));
    }
    if (const int gone = retired_.exchange(0); gone > 0) {
      const int now_live = live_.load();
      scaler_->Changed(
          now_live + gone, now_live, "idle",
          fmt::format("idle_ms>={}",
                      std::chrono::duration_cast<std::chrono::milliseconds>(
                          limits_.idle_timeout)
                          .count()));
    }
  }

  // The growth signal: connections ready for a thread and none idle to take
  // them: queued new ones, or parked ones a worker found readable the
  // moment it came back while every other worker was busy.
  static bool WorkWaits(int queued, uint64_t ready_waits) {
    return queued > 0 || ready_waits > 0;
  }

  void PublishGauges() {
    ctx_.stats->SetWorkerBounds(live_.load(), limits_.min, limits_.max);
  }

  // Out of time: cut sleeps short and unblock workers stuck in I/O.
  void Abort() {
    for (auto& w : workers_) {
      if (!w) continue;
      w->sleeper.Abort();
      int fd = w->current_fd.load();
      if (fd >= 0) shutdown(fd, SHUT_RDWR);
    }
  }

  void WorkerLoop(size_t index, Worker& w) {
    WorkerStats& stats = ctx_.stats->Slot(1 + index);
    stats.tid.store(static_cast<int32_t>(gettid()));
    Request request;
    Response response;
    PendingSpares spares;
    ReadBlocks read_blocks;
    BlockingContext bc;
    // This thread's own handlers (modules' worker_init runs here).
    const std::unique_ptr<Router> router =
        ctx_.routes->MakeRouter(static_cast<int>(index), &stats);
    bc.env.cycle = {router.get(), &stats, ctx_.request_log.get(),
                    static_cast<int>(index)};
    bc.env.limits = &ctx_.config.limits;
    bc.env.trusted = ctx_.config.server.trusted_proxies;
    bc.env.listeners = ctx_.listeners;
    bc.env.draining = &draining_;
    bc.env.request = &request;
    bc.env.response = &response;
    bc.env.spares = &spares;
    bc.env.read_blocks = &read_blocks;
    bc.sleeper = &w.sleeper;
    ParkWhenIdle policy(*queue_, index);
    // A pool that may shrink gives up a thread idle this long.
    const auto idle_for =
        limits_.max > limits_.min
            ? std::chrono::duration_cast<std::chrono::microseconds>(
                  limits_.idle_timeout)
            : std::chrono::microseconds::max();
    bool retired = false;  // Retire() counted it out of live_ already
    for (;;) {
      bool idle = false;
      PooledConnection* c = queue_->Pop(index, idle_for, &idle);
      if (!c && idle) {
        if ((retired = Retire())) break;
        continue;
      }
      if (!c) break;  // closed: the model stops
      w.current_fd.store(c->fd);
      c->turn_started = Clock::now();
      ConnectionOutcome outcome = ServeBlocking(*c, bc, policy);
      while (!HandBack(c, outcome))
        outcome = ServeBlocking(*c, bc, policy, /*read_first=*/true);
      w.current_fd.store(-1);
    }
    queue_->ReleaseSeat(index);
    if (!retired) live_.fetch_sub(1);
    stats.tid.store(0);
    w.exited.store(true);
  }

  // Where a connection goes after its turn: parked in the epoll set until
  // its bytes come, to the back of the queue, or closed. False: bytes came
  // while it was served and nobody has read them: serve it again, reading
  // first.
  bool HandBack(PooledConnection* c, ConnectionOutcome outcome) {
    if (outcome == ConnectionOutcome::kParked) {
      const ParkedSet::Armed armed = queue_->Park(c);
      if (armed == ParkedSet::Armed::kParked) return true;
      if (armed == ParkedSet::Armed::kReady) return false;
      c->conn.Abort(CloseReason::kError);  // epoll_ctl failed
      CloseBlocking(*c);
    } else if (outcome == ConnectionOutcome::kYield) {
      queue_->Requeue(c);
      queue_->Done();
      return true;
    }
    queue_->Closed(c);
    delete c;
    poller_->Closed();
    return true;
  }

  // An idle thread leaves if more than `threads` are left; Maintain() joins
  // it and logs the change.
  bool Retire() {
    if (draining_.load()) return false;  // Drain() joins every thread
    int n = live_.load();
    while (n > limits_.min) {
      if (live_.compare_exchange_weak(n, n - 1)) {
        retired_.fetch_add(1);
        return true;
      }
    }
    return false;
  }

  ModelContext ctx_;
  DrainState state_ = DrainState::kIdle;
  std::atomic<bool> draining_{false};
  std::unique_ptr<ReadyQueue> queue_;
  std::unique_ptr<ConnectionPoller> poller_;
  PoolLimits limits_;
  std::mutex mu_;  // workers_ and state_ (Maintain runs beside Drain)
  // One entry per thread there may be (max_threads); null: free.
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<int> live_{0};
  std::atomic<int> retired_{0};    // since Maintain() last logged them
  uint64_t last_ready_waits_ = 0;  // ReadyQueue's count at the last Scale()
  std::unique_ptr<PoolScaler> scaler_;
};

}  // namespace

std::unique_ptr<Model> MakeThreadPoolModel() {
  return std::make_unique<ThreadPoolModel>();
}

int ThreadPoolMaxWorkers(const ModelConfig& config) {
  return ThreadPoolModel::Limits(config).max;
}

}  // namespace gearbox
