// Design (gunicorn gthread / Apache event, with memcached's queue + wake-up):
//  - The poller thread owns accept() and every idle connection. Idle keep-alive
//    connections sit in epoll (EPOLLONESHOT), not in a thread, so 10,000 idle
//    clients pin no worker.
//  - A readable connection goes through a bounded queue to a worker, which
//  serves
//    it with blocking I/O until it is idle again, then hands it back (return
//    list + eventfd wake-up).
//  - A full queue is answered at once with 503 + Retry-After + close: overload
//  is
//    explicit and memory stays bounded.
#include "models/thread_pool_model.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/logging.h"
#include "models/accept_util.h"
#include "models/blocking_connection.h"

namespace gearbox {
namespace {

constexpr uint64_t kListenerTag = 1ull << 63;
constexpr uint64_t kWakeTag = 1ull << 62;

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

class ThreadPoolModel final : public Model {
 public:
  ~ThreadPoolModel() override {
    if (started_) Drain(Clock::now());
  }

  size_t SlotsNeeded(const ModelConfig& config) const override {
    return 1 + static_cast<size_t>(Threads(config));
  }

  int TotalWorkers() const override {
    return static_cast<int>(workers_.size());
  }

  Status Start(const ModelContext& ctx) override {
    ctx_ = ctx;
    limits_ = ctx.config.limits;
    queue_capacity_ = static_cast<size_t>(ctx.config.threadpool.queue);
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0)
      return Status::Error(std::string("epoll_create1: ") + strerror(errno));
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0)
      return Status::Error(std::string("eventfd: ") + strerror(errno));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kWakeTag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
    if (Status s = SetListening(true); !s.ok()) return s;
    const int threads = Threads(ctx.config);
    sleepers_.resize(static_cast<size_t>(threads));
    current_fd_ =
        std::make_unique<std::atomic<int>[]>(static_cast<size_t>(threads));
    for (int i = 0; i < threads; ++i) {
      sleepers_[static_cast<size_t>(i)] =
          std::make_unique<InterruptibleSleeper>();
      current_fd_[static_cast<size_t>(i)].store(-1);
      workers_.emplace_back([this, i] { WorkerLoop(i); });
    }
    poller_ = std::thread([this] { PollerLoop(); });
    started_ = true;
    LogInfo("model_started", "model=threadpool gen={} threads={} queue={}",
            ctx.generation, threads, queue_capacity_);
    return Status::Ok();
  }

  void StopAccepting() override {
    if (!started_ || draining_.exchange(true)) return;
    // The poller stops accepting and closes idle connections when it sees
    // draining_; wait until it has.
    Wake();
    std::unique_lock<std::mutex> lock(mu_);
    drained_cv_.wait_for(lock, std::chrono::seconds(1),
                         [this] { return poller_drained_; });
  }

  void Drain(Deadline deadline) override {
    if (!started_) return;
    StopAccepting();
    started_ = false;
    {
      // Finish what is queued, in hand, or parked waiting for a first request
      // or the rest of one.
      std::unique_lock<std::mutex> lock(mu_);
      drained_cv_.wait_until(lock, deadline, [this] {
        return queue_.empty() && active_ == 0 && returned_.empty() &&
               poller_drained_ && parked_busy_ == 0;
      });
      stop_ = true;
    }
    queue_cv_.notify_all();
    if (Clock::now() >= deadline) {
      // Out of time: cut sleeps short and unblock workers stuck in I/O.
      for (auto& s : sleepers_) s->Abort();
      for (size_t i = 0; i < workers_.size(); ++i) {
        int fd = current_fd_[i].load();
        if (fd >= 0) shutdown(fd, SHUT_RDWR);
      }
    }
    for (auto& t : workers_) t.join();
    poller_stop_.store(true);
    Wake();
    poller_.join();
    // Anything still queued or parked is closed now.
    for (BlockingConnection* c : queue_)
      Close(c, CloseReason::kDrain, AcceptorStats());
    queue_.clear();
    CloseAllParked();
    close(epoll_fd_);
    close(wake_fd_);
    LogInfo("model_drained", "model=threadpool gen={}", ctx_.generation);
  }

 private:
  static int Threads(const ModelConfig& c) {
    return c.foreground ? 1 : c.threadpool.threads;
  }
  WorkerStats& AcceptorStats() { return ctx_.stats->Slot(0); }

  // Caller holds mu_. The acceptor slot carries the queue gauges.
  void UpdateQueueGauge() {
    WorkerStats& s = AcceptorStats();
    const uint64_t depth = queue_.size();
    s.queue_depth.store(depth, std::memory_order_relaxed);
    queued_.store(static_cast<int>(depth), std::memory_order_relaxed);
    if (depth > s.queue_high.load(std::memory_order_relaxed))
      s.queue_high.store(depth, std::memory_order_relaxed);
  }

  void Wake() {
    uint64_t one = 1;
    ssize_t n = write(wake_fd_, &one, sizeof(one));
    (void)n;
  }

  Status SetListening(bool on) {
    for (size_t i = 0; i < ctx_.listeners->size(); ++i) {
      int fd = (*ctx_.listeners)[i].fd;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kListenerTag | i;
      int rc =
          epoll_ctl(epoll_fd_, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev);
      if (rc != 0 && on) {
        return Status::Error("epoll_ctl(ADD, fd=" + std::to_string(fd) +
                             "): " + strerror(errno));
      }
    }
    listening_ = on;
    return Status::Ok();
  }

  void Close(BlockingConnection* c, CloseReason reason, WorkerStats& stats) {
    CloseBlocking(*c, stats, reason);
    delete c;
    open_.fetch_sub(1, std::memory_order_relaxed);
  }

  // --- poller thread -------------------------------------------------------

  void PollerLoop() {
    std::vector<epoll_event> events(256);
    std::vector<BlockingConnection*> returned;
    while (!poller_stop_.load()) {
      if (draining_.load() && !poller_drained_local_) {
        if (listening_) SetListening(false);
        CloseIdleParked();  // idle keep-alive clients: closed at once
        poller_drained_local_ = true;
        std::lock_guard<std::mutex> lock(mu_);
        poller_drained_ = true;
        parked_busy_ = parked_.size();
        drained_cv_.notify_all();
      }
      const bool at_cap =
          open_.load(std::memory_order_relaxed) >= limits_.max_connections;
      if (!draining_.load()) {
        // Backpressure: at max_connections stop accepting; the kernel backlog
        // absorbs the burst until connections close.
        const bool paused = Clock::now() < accept_paused_until_;
        if ((at_cap || paused) && listening_) SetListening(false);
        if (!at_cap && !paused && !listening_) SetListening(true);
      }
      int timeout_ms = NextExpiryMs();
      if (!listening_ && !draining_.load())
        timeout_ms = std::min(timeout_ms, 50);
      int n = epoll_wait(epoll_fd_, events.data(),
                         static_cast<int>(events.size()), timeout_ms);
      if (n < 0 && errno != EINTR) {
        LogError("epoll_wait_failed", "epfd={} error={}", epoll_fd_,
                 LogQuote(strerror(errno)));
        continue;
      }
      for (int i = 0; i < n; ++i) {
        uint64_t tag = events[static_cast<size_t>(i)].data.u64;
        if (tag == kWakeTag) {
          uint64_t v;
          ssize_t r = read(wake_fd_, &v, sizeof(v));
          (void)r;
        } else if (tag & kListenerTag) {
          if (listening_) AcceptFrom(tag & ~kListenerTag);
        } else {
          auto* c = reinterpret_cast<BlockingConnection*>(tag);
          Unlink(c);
          Dispatch(c);
        }
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        returned.swap(returned_);
        // In transit from a worker to the parked set: Drain() must still wait.
        if (poller_drained_local_) parked_busy_ += returned.size();
      }
      for (BlockingConnection* c : returned) Park(c);
      returned.clear();
      ExpireParked();
      if (poller_drained_local_) {
        // While draining only busy connections stay parked (idle ones are
        // closed), so the count tells Drain() whether any are left.
        std::lock_guard<std::mutex> lock(mu_);
        parked_busy_ = parked_.size();
        drained_cv_.notify_all();
      }
    }
  }

  void AcceptFrom(size_t index) {
    const Listener& l = (*ctx_.listeners)[index];
    WorkerStats& stats = AcceptorStats();
    for (int batch = 0; batch < 64; ++batch) {
      if (open_.load(std::memory_order_relaxed) >= limits_.max_connections)
        return;
      AcceptError error;
      int fd = AcceptConnection(l.fd, error);
      if (fd < 0) {
        if (error == AcceptError::kExhausted) {
          // Out of descriptors: stop watching the listeners for a moment.
          SetListening(false);
          accept_paused_until_ = Clock::now() + kAcceptPause;
        }
        return;
      }
      Bump(stats.accepted);
      open_.fetch_add(1, std::memory_order_relaxed);
      auto* c = new BlockingConnection(fd, l.protocol, limits_);
      Dispatch(c);
    }
  }

  // Queue the connection for a worker, or refuse it with 503 when the queue is
  // full.
  void Dispatch(BlockingConnection* c) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.size() < queue_capacity_ && !stop_) {
        c->ready_us = NowMicros();
        queue_.push_back(c);
        UpdateQueueGauge();
        queue_cv_.notify_one();
        return;
      }
    }
    WorkerStats& stats = AcceptorStats();
    std::string out;
    c->codec->AppendError(503, "Retry-After: 1\r\n", out);
    SendAndForget(c->fd, out);
    Bump(stats.rejected);
    stats.CountStatus(503);
    Close(c, CloseReason::kServer, stats);
  }

  void Park(BlockingConnection* c) {
    if (draining_.load() && !c->in_request && !c->fresh) {
      Close(c, CloseReason::kDrain, AcceptorStats());
      return;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
    ev.data.ptr = c;
    // Each connection is added once and re-armed with MOD afterwards.
    if (epoll_ctl(epoll_fd_, c->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
                  c->fd, &ev) != 0) {
      Close(c, CloseReason::kError, AcceptorStats());
      return;
    }
    c->registered = true;
    // Expiry: a request in progress keeps its own deadline (header/body timeout
    // counted from its first byte); a fresh connection owes its first byte
    // within header_timeout; an idle keep-alive one gets idle_timeout.
    const Clock::time_point now = Clock::now();
    Clock::time_point expires = c->in_request ? c->deadline
                                : c->fresh    ? now + limits_.header_timeout
                                              : now + limits_.idle_timeout;
    c->park_entry = parked_.emplace(expires, c);
    c->parked = true;
  }

  void Unlink(BlockingConnection* c) {
    if (!c->parked) return;
    parked_.erase(c->park_entry);
    c->parked = false;
  }

  // Closes a parked connection whose time ran out, with the answer it is owed.
  void Expire(BlockingConnection* c) {
    WorkerStats& stats = AcceptorStats();
    if (c->in_request && c->codec->InRequest()) {
      std::string out;
      c->codec->AppendError(408, {},
                            out);  // mid-request: the client may read it
      SendAndForget(c->fd, out);
      stats.CountStatus(408);
    }
    Close(c,
          c->in_request || c->fresh ? CloseReason::kHeaderTimeout
                                    : CloseReason::kIdleTimeout,
          stats);
  }

  int NextExpiryMs() const {
    if (parked_.empty()) return 1000;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    parked_.begin()->first - Clock::now())
                    .count();
    return static_cast<int>(std::clamp<int64_t>(left + 1, 0, 1000));
  }

  // O(expired * log n): the index is ordered by expiry.
  void ExpireParked() {
    const Clock::time_point now = Clock::now();
    while (!parked_.empty() && parked_.begin()->first <= now) {
      BlockingConnection* c = parked_.begin()->second;
      Unlink(c);
      Expire(c);
    }
  }

  void CloseIdleParked() {
    for (auto it = parked_.begin(); it != parked_.end();) {
      BlockingConnection* c = it->second;
      ++it;
      // Mid-request or fresh (accepted, first request not here yet): let it
      // finish, or time out.
      if (c->in_request || c->fresh) continue;
      Unlink(c);
      Close(c, CloseReason::kDrain, AcceptorStats());
    }
  }

  void CloseAllParked() {
    while (!parked_.empty()) {
      BlockingConnection* c = parked_.begin()->second;
      Unlink(c);
      Close(c, CloseReason::kDrain, AcceptorStats());
    }
  }

  // --- worker threads ------------------------------------------------------

  void WorkerLoop(int index) {
    const size_t slot = 1 + static_cast<size_t>(index);
    WorkerStats& stats = ctx_.stats->Slot(slot);
    stats.tid.store(static_cast<int32_t>(gettid()));
    BlockingContext bc;
    bc.cycle = {ctx_.router.get(), &stats, ctx_.request_log.get(), index};
    bc.limits = &limits_;
    bc.draining = &draining_;
    bc.sleeper = sleepers_[static_cast<size_t>(index)].get();
    const IdlePolicy park{.park = true,
                          .listeners = {},
                          .queued = &queued_,
                          .idle_workers = &idle_workers_};
    for (;;) {
      BlockingConnection* c;
      {
        std::unique_lock<std::mutex> lock(mu_);
        idle_workers_.fetch_add(1, std::memory_order_relaxed);
        queue_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        idle_workers_.fetch_sub(1, std::memory_order_relaxed);
        if (queue_.empty()) return;  // stop_ and nothing left
        c = queue_.front();
        queue_.pop_front();
        UpdateQueueGauge();
        ++active_;
      }
      current_fd_[static_cast<size_t>(index)].store(c->fd);
      c->turn_started = Clock::now();
      ConnectionOutcome outcome = ServeBlocking(*c, bc, park);
      current_fd_[static_cast<size_t>(index)].store(-1);
      if (outcome == ConnectionOutcome::kClosed) {
        delete c;
        open_.fetch_sub(1, std::memory_order_relaxed);
      }
      bool wake = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        --active_;
        if (outcome == ConnectionOutcome::kParked) {
          returned_.push_back(c);
          wake = true;
        } else if (outcome == ConnectionOutcome::kYield) {
          // Its next request is buffered: back of the queue, behind the
          // clients that were waiting (bounded by the open connections).
          c->ready_us = NowMicros();
          queue_.push_back(c);
          UpdateQueueGauge();
          queue_cv_.notify_one();
        }
        if (draining_.load() && queue_.empty() && active_ == 0)
          drained_cv_.notify_all();
      }
      if (wake || draining_.load() || !listening_) Wake();
    }
  }

  ModelContext ctx_;
  LimitsConfig limits_;
  size_t queue_capacity_ = 0;
  bool started_ = false;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  Clock::time_point accept_paused_until_{};  // poller thread only
  std::atomic<bool> draining_{false};
  std::atomic<bool> poller_stop_{false};
  std::atomic<int64_t> open_{0};
  bool listening_ = false;  // poller thread only (and Start)

  std::mutex mu_;  // guards queue_, returned_, active_, stop_, poller_drained_
  std::condition_variable queue_cv_;
  std::condition_variable drained_cv_;
  std::deque<BlockingConnection*> queue_;
  std::vector<BlockingConnection*> returned_;
  int active_ = 0;
  bool stop_ = false;
  bool poller_drained_ = false;
  bool poller_drained_local_ = false;
  size_t parked_busy_ = 0;
  std::atomic<int> queued_{0};        // queue_.size(), readable without mu_
  std::atomic<int> idle_workers_{0};  // workers waiting on queue_cv_  // parked
                                      // connections Drain() must wait for

  // Parked connections by expiry time (poller thread only).
  std::multimap<Clock::time_point, BlockingConnection*> parked_;

  std::vector<std::unique_ptr<InterruptibleSleeper>> sleepers_;
  std::unique_ptr<std::atomic<int>[]> current_fd_;
  std::vector<std::thread> workers_;
  std::thread poller_;
};

}  // namespace

std::unique_ptr<Model> MakeThreadPoolModel() {
  return std::make_unique<ThreadPoolModel>();
}

}  // namespace gearbox
