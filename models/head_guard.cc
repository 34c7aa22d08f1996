#include "models/head_guard.h"

#include <event2/event.h>
#include <event2/event_struct.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <list>
#include <system_error>
#include <thread>

#include "daemon/codec.h"
#include "daemon/logging.h"
#include "models/blocking_connection.h"
#include "models/connection_handoff.h"

namespace gearbox {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadChunk = 16384;
// Parked connections taken from the channel per wake-up, so one burst cannot
// starve the timers and reads of those already held.
constexpr int kReceiveBurst = 64;

Clock::time_point FromNs(int64_t ns) {
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(
      std::chrono::nanoseconds(ns)));
}

timeval Until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      deadline - Clock::now());
  if (left.count() < 0) left = {};
  return {static_cast<time_t>(left.count() / 1000000),
          static_cast<suseconds_t>(left.count() % 1000000)};
}

class HeadGuardImpl;

// One parked connection.
struct Guarded {
  HeadGuardImpl* guard = nullptr;
  int fd = -1;
  HandoffHeader header;
  std::unique_ptr<ServerCodec> codec;
  Buffer in;
  Request request;
  std::string out;      // every reply the codec produced while parsing `in`
  size_t out_sent = 0;  // the prefix of `out` the peer already has
  event ev;
  bool armed = false;
  std::list<Guarded>::iterator self;
};

class HeadGuardImpl final : public HeadGuard {
 public:
  HeadGuardImpl(const Listeners& listeners, const LimitsConfig& limits,
                WorkerStats& stats)
      : listeners_(listeners), limits_(limits), stats_(stats) {}

  ~HeadGuardImpl() override {
    Abort();
    Join();
    for (int fd : {park_[0], park_[1], unpark_[0], unpark_[1], wake_fd_})
      if (fd >= 0) close(fd);
    if (park_event_) event_free(park_event_);
    if (unpark_event_) event_free(unpark_event_);
    if (wake_event_) event_free(wake_event_);
    if (base_) event_base_free(base_);
  }

  bool Init(std::string* error) {
    const size_t need =
        static_cast<size_t>(limits_.max_header_bytes) + 2 * kReadChunk;
    if (!MakeHandoffChannel(park_, need) ||
        !MakeHandoffChannel(unpark_, need)) {
      *error = std::string("socketpair(SOCK_SEQPACKET): ") + strerror(errno);
      return false;
    }
    capacity_ =
        std::min(HandoffCapacity(park_[1]), HandoffCapacity(unpark_[1]));
    if (capacity_ < need) {
      *error = "a parked request head needs " + std::to_string(need) +
               " bytes per message; the socket buffer allows " +
               std::to_string(capacity_) +
               " (raise net.core.wmem_max or lower max_header_bytes)";
      return false;
    }
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) {
      *error = std::string("eventfd: ") + strerror(errno);
      return false;
    }
    event_config* cfg = event_config_new();
    event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
    base_ = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (!base_) {
      *error = "event_base_new_with_config failed";
      return false;
    }
    park_event_ = event_new(base_, park_[0], EV_READ | EV_PERSIST,
                            &HeadGuardImpl::OnParkReadable, this);
    unpark_event_ = event_new(base_, unpark_[1], EV_WRITE | EV_PERSIST,
                              &HeadGuardImpl::OnUnparkWritable, this);
    wake_event_ = event_new(base_, wake_fd_, EV_READ | EV_PERSIST,
                            &HeadGuardImpl::OnWake, this);
    if (!park_event_ || !unpark_event_ || !wake_event_) {
      *error = "event_new failed";
      return false;
    }
    event_add(park_event_, nullptr);
    event_add(wake_event_, nullptr);
    stats_.pid.store(getpid());
    return true;
  }

  int park_fd() const override { return park_[1]; }
  int unpark_fd() const override { return unpark_[0]; }
  size_t capacity() const override { return capacity_; }

  bool Start(std::string* error) override {
    try {
      thread_ = std::thread([this] {
        stats_.tid.store(static_cast<int32_t>(gettid()));
        event_base_dispatch(base_);
      });
    } catch (const std::system_error& e) {
      *error = std::string("head guard thread: ") + e.what();
      return false;
    }
    return true;
  }

  void FinishAfterChildren() override {
    if (park_[1] >= 0) {
      close(park_[1]);
      park_[1] = -1;
    }
    // Children hold the other copies; their closes make the park end read
    // EOF, which the guard thread notices by itself.
  }

  void Abort() override {
    aborting_.store(true);
    if (wake_fd_ >= 0) {
      uint64_t one = 1;
      ssize_t n = write(wake_fd_, &one, sizeof(one));
      (void)n;
    }
  }

  void Join() override {
    if (thread_.joinable()) thread_.join();
  }

 private:
  static void OnParkReadable(evutil_socket_t, short, void* arg) {
    static_cast<HeadGuardImpl*>(arg)->ReceiveParked();
  }
  static void OnUnparkWritable(evutil_socket_t, short, void* arg) {
    static_cast<HeadGuardImpl*>(arg)->FlushPending();
  }
  static void OnWake(evutil_socket_t, short, void* arg) {
    auto* self = static_cast<HeadGuardImpl*>(arg);
    uint64_t v;
    ssize_t n = read(self->wake_fd_, &v, sizeof(v));
    (void)n;
    if (self->aborting_.load()) self->CloseAll();
  }
  static void OnConnection(evutil_socket_t, short what, void* arg) {
    auto* c = static_cast<Guarded*>(arg);
    c->armed = false;
    if (what & EV_TIMEOUT) {
      c->guard->TimeOut(*c);
    } else {
      c->guard->ReadHead(*c);
    }
  }

  void ReceiveParked() {
    for (int i = 0; i < kReceiveBurst; ++i) {
      Buffer bytes;
      HandoffHeader header;
      int fd = ReceiveConnection(park_[0], capacity_, header, bytes);
      if (fd == kHandoffEnd) {
        // Every child has stopped parking (the generation is draining).
        event_del(park_event_);
        parking_over_ = true;
        MaybeFinish();
        return;
      }
      if (fd < 0) return;  // EAGAIN (or a malformed message, already closed)
      if (header.listener >= listeners_.size()) {
        close(fd);
        continue;
      }
      if (static_cast<int64_t>(held_) >= limits_.max_connections) {
        Reject(fd, header);
        continue;
      }
      conns_.emplace_front();
      Guarded& c = conns_.front();
      c.self = conns_.begin();
      c.guard = this;
      c.fd = fd;
      c.header = header;
      c.codec = MakeCodec(listeners_[header.listener].protocol, limits_);
      c.in.Append(bytes.view());
      c.out_sent = header.replayed_out;
      event_assign(&c.ev, base_, fd, EV_READ, &HeadGuardImpl::OnConnection, &c);
      ++held_;
      Bump(stats_.parked);
      UpdateGauge();
      // Parse what the child had (a head can complete between its last read
      // and the hand-over), then read whatever else is there.
      ReadHead(c);
    }
  }

  // Over max_connections parked: the newcomer gets 503, as a full threadpool
  // queue answers.
  void Reject(int fd, const HandoffHeader& header) {
    std::string out;
    MakeCodec(listeners_[header.listener].protocol, limits_)
        ->AppendError(503, "Retry-After: 1\r\n", out);
    SendAndForget(fd, out);
    close(fd);
    Bump(stats_.rejected);
    stats_.CountStatus(503);
    stats_.CountClose(CloseReason::kServer);
  }

  void ReadHead(Guarded& c) {
    for (;;) {
      const size_t room = capacity_ - std::min(capacity_, c.in.size());
      if (room == 0) break;
      const size_t want = std::min(kReadChunk, room);
      ssize_t n = recv(c.fd, c.in.Reserve(want), want, 0);
      if (n > 0) {
        c.in.Commit(static_cast<size_t>(n));
        Bump(stats_.bytes_in, static_cast<uint64_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      Close(c, CloseReason::kClient);
      return;
    }
    ServerCodec::Result r = c.codec->Parse(c.in.view(), c.request, c.out);
    SendReplies(c);
    switch (r.status) {
      case ServerCodec::Status::kError:
        Bump(stats_.bad_input);
        if (r.error_status) stats_.CountStatus(r.error_status);
        Close(c, CloseReason::kError);
        return;
      case ServerCodec::Status::kClose:
        Close(c, CloseReason::kClient);
        return;
      case ServerCodec::Status::kComplete:
        HandBack(c);
        return;
      case ServerCodec::Status::kIncomplete:
        if (c.codec->InBody()) {
          HandBack(c);  // the head is done; a child receives the body
          return;
        }
        break;
    }
    if (c.in.size() >= capacity_) {
      // Only a FastCGI peer sending management records without end could get
      // here (a head beyond max_header_bytes was answered above).
      Bump(stats_.bad_input);
      Close(c, CloseReason::kError);
      return;
    }
    if (Clock::now() >= FromNs(c.header.deadline_ns)) {
      TimeOut(c);
      return;
    }
    timeval tv = Until(FromNs(c.header.deadline_ns));
    event_add(&c.ev, &tv);
    c.armed = true;
  }

  // Replies the codec produced beyond what the peer already has (FastCGI
  // management records); best effort on a socket with an empty send buffer.
  void SendReplies(Guarded& c) {
    if (c.out.size() <= c.out_sent) return;
    SendAndForget(c.fd, std::string_view(c.out).substr(c.out_sent));
    Bump(stats_.bytes_out, c.out.size() - c.out_sent);
    c.out_sent = c.out.size();
  }

  void TimeOut(Guarded& c) {
    std::string out;
    c.codec->AppendError(408, {}, out);
    SendAndForget(c.fd, out);
    stats_.CountStatus(408);
    Close(c, CloseReason::kHeaderTimeout);
  }

  void HandBack(Guarded& c) {
    c.header.replayed_out = c.out.size();
    if (!pending_.empty() || !Send(c)) {
      // Every child is busy and the channel is full: wait for room, in order.
      pending_.push_back(&c);
      if (pending_.size() == 1) event_add(unpark_event_, nullptr);
      return;
    }
    Forget(c);
  }

  // False when the channel is full (try again when writable).
  bool Send(Guarded& c) {
    int err = SendConnection(unpark_[1], c.fd, c.header, c.in.view());
    if (err == 0) return true;
    if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) return false;
    LogWarn("head_guard_handback_failed", "error={} bytes={}",
            LogQuote(strerror(err)), c.in.size());
    std::string out;
    c.codec->AppendError(503, "Retry-After: 1\r\n", out);
    SendAndForget(c.fd, out);
    Bump(stats_.rejected);
    stats_.CountStatus(503);
    c.fd = Closed(c.fd, CloseReason::kServer);
    return true;  // dealt with: Forget() it
  }

  void FlushPending() {
    while (!pending_.empty()) {
      Guarded& c = *pending_.front();
      if (!Send(c)) return;
      pending_.pop_front();
      Forget(c);
    }
    event_del(unpark_event_);
  }

  int Closed(int fd, CloseReason reason) {
    if (fd >= 0) {
      close(fd);
      stats_.CountClose(reason);
    }
    return -1;
  }

  void Close(Guarded& c, CloseReason reason) {
    c.fd = Closed(c.fd, reason);
    Forget(c);
  }

  // Drops the guard's record (and its fd, when it was handed back).
  void Forget(Guarded& c) {
    if (c.armed) event_del(&c.ev);
    if (c.fd >= 0) close(c.fd);  // a child has its own copy now
    --held_;
    conns_.erase(c.self);
    UpdateGauge();
    MaybeFinish();
  }

  void CloseAll() {
    pending_.clear();
    while (!conns_.empty()) Close(conns_.front(), CloseReason::kDrain);
    Finish();
  }

  void MaybeFinish() {
    if (parking_over_ && conns_.empty()) Finish();
  }

  // Closing the unpark end is the draining children's signal to exit.
  void Finish() {
    if (unpark_[1] >= 0) {
      event_del(unpark_event_);
      close(unpark_[1]);
      unpark_[1] = -1;
    }
    event_base_loopbreak(base_);
  }

  void UpdateGauge() { stats_.open_conns.store(held_); }

  const Listeners& listeners_;
  const LimitsConfig limits_;
  WorkerStats& stats_;
  int park_[2] = {-1, -1};    // [0] guard receives, [1] children send
  int unpark_[2] = {-1, -1};  // [0] children receive, [1] guard sends
  int wake_fd_ = -1;
  size_t capacity_ = 0;
  event_base* base_ = nullptr;
  event* park_event_ = nullptr;
  event* unpark_event_ = nullptr;
  event* wake_event_ = nullptr;
  std::list<Guarded> conns_;
  std::deque<Guarded*> pending_;  // head complete, waiting for channel room
  uint64_t held_ = 0;
  bool parking_over_ = false;
  std::atomic<bool> aborting_{false};
  std::thread thread_;
};

}  // namespace

std::unique_ptr<HeadGuard> HeadGuard::Create(const Listeners& listeners,
                                             const LimitsConfig& limits,
                                             WorkerStats& stats,
                                             std::string* error) {
  auto guard = std::make_unique<HeadGuardImpl>(listeners, limits, stats);
  if (!guard->Init(error)) return nullptr;
  return guard;
}

}  // namespace gearbox
