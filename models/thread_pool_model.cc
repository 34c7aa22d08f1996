// Design (gunicorn gthread / Apache event, with memcached's queue + wake-up):
//  - ConnectionPoller owns accept() and every connection no thread holds: idle
//    keep-alive and slow mid-request ones sit in epoll, not in a thread.
//  - ReadyQueue hands a readable connection to a worker, which serves it with
//    blocking I/O until it would wait for bytes, then hands it back.
//  - A full queue is answered at once with 503 + Retry-After + close.
//  - This file wires them and the worker threads, and runs the drain.
#include "models/thread_pool_model.h"

#include <sys/socket.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/logging.h"
#include "models/blocking_connection.h"
#include "models/connection_poller.h"
#include "models/ready_queue.h"

namespace gearbox {
namespace {

// threadpool: how long a connection may keep its worker while others queue.
// A slice rather than one request per turn: handing every request back to
// the poller cost up to 4x the throughput of fast requests.
constexpr std::chrono::milliseconds kTurnSlice{10};

// A per-worker sleeper that a forced stop can interrupt.
class InterruptibleSleeper final : public Sleeper {
 public:
  bool SleepFor(std::chrono::microseconds d) override {
    std::unique_lock<std::mutex> lock(mu_);
    return !cv_.wait_for(lock, d, [this] { return aborted_; });
  }
  void Abort() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool aborted_ = false;
};

// A worker never blocks waiting for a client's bytes: the poller does that.
class ParkWhenIdle final : public BlockingPolicy {
 public:
  explicit ParkWhenIdle(const ReadyQueue& queue) : queue_(queue) {}
  ReadWait WaitReadable(BlockingConnection&, const Interest&) override {
    return ReadWait::kPark;
  }
  // Its turn is over once it has had the worker for kTurnSlice and more
  // connections wait than there are idle workers.
  bool TurnOver(const BlockingConnection& c) override {
    return Clock::now() - c.turn_started >= kTurnSlice &&
           queue_.queued().load(std::memory_order_relaxed) >
               queue_.idle_workers().load(std::memory_order_relaxed);
  }

 private:
  const ReadyQueue& queue_;
};

// One worker thread's state.
struct Worker {
  InterruptibleSleeper sleeper;
  std::atomic<int> current_fd{-1};  // unblocked by a forced stop
  std::thread thread;
};

class ThreadPoolModel final : public Model {
 public:
  ~ThreadPoolModel() override {
    if (state_ != DrainState::kIdle && state_ != DrainState::kStopped)
      Drain(Clock::now());
  }

  size_t SlotsNeeded(const ModelConfig& config) const override {
    return 1 + static_cast<size_t>(Threads(config));
  }

  int TotalWorkers() const override {
    return static_cast<int>(workers_.size());
  }

  Status Start(const ModelContext& ctx) override {
    ctx_ = ctx;
    queue_ = std::make_unique<ReadyQueue>(
        static_cast<size_t>(ctx.config.threadpool.queue), ctx_.stats->Slot(0));
    poller_ = std::make_unique<ConnectionPoller>(ctx_, *queue_, draining_);
    if (Status s = poller_->Init(); !s.ok()) return s;
    const int threads = Threads(ctx.config);
    for (int i = 0; i < threads; ++i)
      workers_.push_back(std::make_unique<Worker>());
    for (int i = 0; i < threads; ++i)
      workers_[static_cast<size_t>(i)]->thread =
          std::thread([this, i] { WorkerLoop(i); });
    poller_->StartThread();
    state_ = DrainState::kServing;
    LogInfo("model_started", "model=threadpool gen={} threads={} queue={}",
            ctx.generation, threads, ctx.config.threadpool.queue);
    return Status::Ok();
  }

  void StopAccepting() override {
    if (state_ != DrainState::kServing) return;
    state_ = DrainState::kNotAccepting;
    draining_.store(true);
    poller_->WaitDrainAcknowledged();
  }

  void Drain(Deadline deadline) override {
    if (state_ == DrainState::kIdle || state_ == DrainState::kStopped) return;
    StopAccepting();
    // Finish what is queued, in hand, or parked waiting for a first request
    // or the rest of one.
    const bool finished = queue_->WaitIdle(deadline);
    state_ = DrainState::kStopping;
    queue_->Close();
    if (!finished) Abort();
    for (auto& w : workers_) w->thread.join();
    poller_->Stop();
    for (BlockingConnection* c : queue_->TakeQueued()) {
      c->conn.Abort(CloseReason::kDrain);
      CloseBlocking(*c);
      delete c;
      poller_->Closed();
    }
    state_ = DrainState::kStopped;
    LogInfo("model_drained", "model=threadpool gen={}", ctx_.generation);
  }

 private:
  enum class DrainState { kIdle, kServing, kNotAccepting, kStopping, kStopped };

  static int Threads(const ModelConfig& c) {
    return c.foreground ? 1 : c.threadpool.threads;
  }

  // Out of time: cut sleeps short and unblock workers stuck in I/O.
  void Abort() {
    for (auto& w : workers_) {
      w->sleeper.Abort();
      int fd = w->current_fd.load();
      if (fd >= 0) shutdown(fd, SHUT_RDWR);
    }
  }

  void WorkerLoop(int index) {
    Worker& w = *workers_[static_cast<size_t>(index)];
    WorkerStats& stats = ctx_.stats->Slot(1 + static_cast<size_t>(index));
    stats.tid.store(static_cast<int32_t>(gettid()));
    Request request;
    Response response;
    BlockingContext bc;
    // This thread's own handlers (modules' worker_init runs here).
    const std::unique_ptr<Router> router = ctx_.routes->MakeRouter(index);
    bc.env.cycle = {router.get(), &stats, ctx_.request_log.get(), index};
    bc.env.limits = &ctx_.config.limits;
    bc.env.draining = &draining_;
    bc.env.request = &request;
    bc.env.response = &response;
    bc.sleeper = &w.sleeper;
    ParkWhenIdle policy(*queue_);
    while (BlockingConnection* c = queue_->Pop()) {
      w.current_fd.store(c->fd);
      c->turn_started = Clock::now();
      ConnectionOutcome outcome = ServeBlocking(*c, bc, policy);
      w.current_fd.store(-1);
      BlockingConnection* parked = nullptr;
      if (outcome == ConnectionOutcome::kClosed) {
        delete c;
        poller_->Closed();
      } else if (outcome == ConnectionOutcome::kYield) {
        queue_->Requeue(c);
      } else {
        parked = c;
      }
      queue_->Done(parked);
      if (parked || draining_.load()) poller_->Wake();
    }
  }

  ModelContext ctx_;
  DrainState state_ = DrainState::kIdle;
  std::atomic<bool> draining_{false};
  std::unique_ptr<ReadyQueue> queue_;
  std::unique_ptr<ConnectionPoller> poller_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace

std::unique_ptr<Model> MakeThreadPoolModel() {
  return std::make_unique<ThreadPoolModel>();
}

}  // namespace gearbox
