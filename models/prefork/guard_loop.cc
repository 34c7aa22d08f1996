// The head guard process's event loop (head_guard.h says what the guard
// is): it holds parked connections with a codec that stops at bodies, reads
// the rest of each head under the deadline the child started, and hands the
// connection back once its head is complete (the machine is in Phase::kBody).
#include "models/prefork/guard_loop.h"

#include <event2/event.h>
#include <event2/event_struct.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <list>

#include "daemon/connection/connection.h"
#include "daemon/logging.h"
#include "models/driver.h"
#include "models/prefork/connection_handoff.h"

namespace gearbox {
namespace {

// Parked connections taken from the channel per wake-up, so one burst cannot
// starve the timers and reads of those already held.
constexpr int kReceiveBurst = 64;

timeval Until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      deadline - Clock::now());
  if (left.count() < 0) left = {};
  return {static_cast<time_t>(left.count() / 1000000),
          static_cast<suseconds_t>(left.count() % 1000000)};
}

uint64_t MaxHeld(const LimitsConfig& limits) {
  constexpr uint64_t kSpareFds = 32;  // channels, epoll, signal pipe, stdio
  uint64_t cap = static_cast<uint64_t>(limits.max_connections);
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 &&
      nofile.rlim_cur != RLIM_INFINITY)
    cap = std::min<uint64_t>(
        cap, nofile.rlim_cur > kSpareFds ? nofile.rlim_cur - kSpareFds : 1);
  return cap;
}

class GuardLoop;

// A codec that parses heads only: no request is served in the guard.
std::unique_ptr<ServerCodec> HeadCodec(Protocol protocol,
                                       const LimitsConfig& limits) {
  std::unique_ptr<ServerCodec> codec = MakeCodec(protocol, limits);
  codec->StopAtBody();
  return codec;
}

// One parked connection: the state machine, stopping at bodies, and its event.
struct Guarded {
  Guarded(Protocol protocol, const LimitsConfig& limits)
      : conn(protocol, HeadCodec(protocol, limits)) {}
  GuardLoop* guard = nullptr;
  int fd = -1;
  uint32_t listener = 0;
  Connection conn;
  event ev;
  short events = 0;  // what ev waits for: reading (and EV_CLOSED) or writing
  bool armed = false;
  std::list<Guarded>::iterator self;

  // The head has arrived: the body (if any) is for the child that serves it.
  bool HeadComplete() const { return conn.phase() == Phase::kBody; }

  // Kept alive and quiet: no request has started since the last response.
  bool BetweenRequests() const {
    return conn.phase() == Phase::kIdle && !conn.has_input();
  }
};

// The guard process's event loop.
class GuardLoop {
 public:
  GuardLoop(const Listeners& listeners, const LimitsConfig& limits,
            WorkerStats& stats, int park_rx, int unpark_tx, size_t capacity)
      : listeners_(listeners),
        limits_(limits),
        park_rx_(park_rx),
        unpark_tx_(unpark_tx),
        capacity_(capacity) {
    env_.cycle.stats = &stats;
    env_.limits = &limits_;
    env_.draining = &draining_;
    env_.request = &request_;
    env_.response = &response_;
  }

  // The guard process exits after Run(); a loop run in a test's thread frees
  // what it made.
  ~GuardLoop() {
    for (event* e : {park_event_, unpark_event_, term_event_})
      if (e) event_free(e);
    if (base_) event_base_free(base_);
  }
  GuardLoop(const GuardLoop&) = delete;
  GuardLoop& operator=(const GuardLoop&) = delete;

  // Runs until parking is over and every held connection is dealt with, or
  // SIGTERM (then what is held is closed). Returns false if libevent fails.
  bool Run() {
    base_ = event_base_new();
    if (!base_) return false;
    park_event_ = event_new(base_, park_rx_, EV_READ | EV_PERSIST,
                            &GuardLoop::OnParkReadable, this);
    unpark_event_ = event_new(base_, unpark_tx_, EV_WRITE | EV_PERSIST,
                              &GuardLoop::OnUnparkWritable, this);
    term_event_ = evsignal_new(base_, SIGTERM, &GuardLoop::OnTerm, this);
    if (!park_event_ || !unpark_event_ || !term_event_) return false;
    // EPOLLRDHUP tells a held connection's close from its next request.
    if (event_base_get_features(base_) & EV_FEATURE_EARLY_CLOSE)
      early_close_ = EV_CLOSED;
    event_add(park_event_, nullptr);
    event_add(term_event_, nullptr);
    event_base_dispatch(base_);
    return true;
  }

 private:
  static void OnParkReadable(evutil_socket_t, short, void* arg) {
    static_cast<GuardLoop*>(arg)->ReceiveParked();
  }
  static void OnUnparkWritable(evutil_socket_t, short, void* arg) {
    static_cast<GuardLoop*>(arg)->FlushPending();
  }
  // SIGTERM: the master gave up waiting (drain deadline) or died.
  static void OnTerm(evutil_socket_t, short, void* arg) {
    static_cast<GuardLoop*>(arg)->CloseAll();
  }
  static void OnConnection(evutil_socket_t, short what, void* arg) {
    auto* c = static_cast<Guarded*>(arg);
    c->armed = false;
    if (what & EV_TIMEOUT) {
      c->conn.DeadlinePassed(Clock::now());
      c->guard->Settle(*c);
    } else if (what & EV_WRITE) {
      SendPending(c->fd, c->conn, Clock::now());  // the rest of a reply
      c->guard->Settle(*c);
    } else if (!(what & EV_CLOSED) && c->BetweenRequests()) {
      // A kept-alive connection's next request is arriving: a child reads
      // and parses it, once, straight from the socket (the guard would read
      // and parse it only to hand the same bytes over). A head that then
      // trickles comes back like any slow head. A peer that closed (or sent
      // its last request and shut down) is read here instead.
      c->guard->HandBack(*c);
    } else {
      c->guard->ReadHead(*c);
    }
  }

  WorkerStats& stats() { return *env_.cycle.stats; }

  void ReceiveParked() {
    for (int i = 0; i < kReceiveBurst; ++i) {
      inbox_.Consume(inbox_.size());  // one reused buffer for every message
      HandoffHeader header;
      int fd = ReceiveConnection(park_rx_, capacity_, header, inbox_);
      if (fd == kHandoffEnd) {
        // Every child has stopped parking (the generation is draining).
        event_del(park_event_);
        parking_over_ = true;
        LingerIdle();
        MaybeFinish();
        return;
      }
      if (fd < 0) {
        if (errno != EPROTO) return;  // EAGAIN: nothing more queued
        // Arrived without its fd (none left in this process: MSG_CTRUNC) or
        // cut short; the kernel closed the connection. Count the loss.
        stats().CountClose(CloseReason::kError);
        continue;
      }
      if (header.listener >= listeners_.size()) {
        close(fd);  // cannot happen: the generation's own listeners
        stats().CountClose(CloseReason::kError);
        continue;
      }
      Hold(fd, header);
    }
  }

  void Hold(int fd, const HandoffHeader& header) {
    conns_.emplace_front(listeners_[header.listener].protocol, limits_);
    Guarded& c = conns_.front();
    c.self = conns_.begin();
    c.guard = this;
    c.fd = fd;
    c.listener = header.listener;
    c.conn.Attach(&env_);
    const std::string_view message = inbox_.view();
    c.conn.Adopt(header.progress, message.substr(0, header.record_bytes),
                 message.substr(header.record_bytes));
    c.events = EV_READ | early_close_;
    event_assign(&c.ev, base_, fd, c.events, &GuardLoop::OnConnection, &c);
    if (conns_.size() > max_held_) {
      // Over max_held_ parked: the newcomer gets 503, as a full threadpool
      // queue answers.
      c.conn.Refuse();
      Settle(c);
      return;
    }
    // `parked` counts slow heads; kept-alive connections held between
    // requests are the guard's open connections, not parked heads.
    if (c.conn.phase() != Phase::kIdle) Bump(stats().parked);
    UpdateGauge();
    if (c.BetweenRequests()) {
      // Kept alive between requests: the child found it quiet an instant
      // ago, so wait for the next request rather than try a read now (the
      // event fires at once if bytes came meanwhile).
      Settle(c);
      return;
    }
    // Parse what the child had (a head can complete between its last read
    // and the hand-over), then read whatever else is there.
    c.conn.Process(Clock::now());
    ReadHead(c);
  }

  void ReadHead(Guarded& c) {
    const Clock::time_point now = Clock::now();
    for (;;) {
      // The record that replaces the head on the way back may be a little
      // larger than it (kHeadRecordOverhead).
      const size_t held = c.conn.input().size() + kHeadRecordOverhead;
      const size_t room = capacity_ - std::min(capacity_, held);
      if (room == 0) break;
      // Through a shared chunk, not straight into the connection's buffer:
      // a slowloris head is a few bytes at a time, and reserving a read-sized
      // buffer per held connection would cost 16 KiB each.
      const size_t want = std::min(sizeof(chunk_), room);
      ssize_t n = recv(c.fd, chunk_, want, 0);
      if (n > 0) {
        c.conn.Received(std::string_view(chunk_, static_cast<size_t>(n)), now);
        if (c.HeadComplete() || c.conn.Next(now).kind != Interest::Kind::kRead)
          break;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      c.conn.PeerClosed();
      break;
    }
    Settle(c);
  }

  // The guard's primitives for the driver core (models/driver.h): one
  // event per held connection, armed to read the rest of a head (or to send
  // the rest of a reply) until the machine's deadline.
  class Port {
   public:
    Port(GuardLoop& loop, Guarded& c) : loop_(loop), c_(c) {}
    Clock::time_point Now() { return now_; }
    int fd() const { return c_.fd; }
    bool MayProcess() { return true; }
    bool AwaitRead(const Interest& i, Clock::time_point now) {
      if (c_.HeadComplete()) {
        loop_.HandBack(c_);  // replies to records before it went out first
        return false;
      }
      if (c_.conn.input().size() + kHeadRecordOverhead >= loop_.capacity_) {
        // Only a FastCGI peer sending management records without end could
        // get here (a head beyond max_header_bytes was answered).
        Bump(loop_.stats().bad_input);
        c_.conn.Abort(CloseReason::kError);
        return true;
      }
      if (now >= i.deadline) {
        c_.conn.DeadlinePassed(now);  // 408, or a silent close
        return true;
      }
      loop_.Arm(c_, EV_READ | loop_.early_close_, i.deadline);
      return false;
    }
    bool AwaitWrite(const Interest& i, Clock::time_point) {
      loop_.Arm(c_, EV_WRITE, i.deadline);
      return false;
    }
    bool AwaitHandler(const Interest&, Clock::time_point) {
      c_.conn.Abort(CloseReason::kError);  // no request is served here
      return true;
    }
    void Close() { loop_.Close(c_); }

   private:
    GuardLoop& loop_;
    Guarded& c_;
    const Clock::time_point now_ = Clock::now();
  };

  void Settle(Guarded& c) {
    Port port(*this, c);
    Drive(port, c.conn);
  }

  void Arm(Guarded& c, short events, Clock::time_point deadline) {
    if (events != c.events) {
      if (c.armed) event_del(&c.ev);  // not re-assigned while pending
      c.events = events;
      event_assign(&c.ev, base_, c.fd, events, &GuardLoop::OnConnection, &c);
    }
    timeval tv = Until(deadline);
    event_add(&c.ev, &tv);
    c.armed = true;
  }

  void HandBack(Guarded& c) {
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
    HandoffHeader header;
    header.listener = c.listener;
    header.progress = c.conn.Progress();
    record_.clear();
    const std::string_view bytes = c.conn.SaveParsed(record_);
    int err = SendConnection(unpark_tx_, c.fd, header, record_, bytes);
    if (err == 0) return true;
    if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) return false;
    LogWarn("head_guard_handback_failed", "error={} bytes={}",
            LogQuote(strerror(err)), c.conn.input().size());
    c.conn.Refuse();
    SendPending(c.fd, c.conn, Clock::now());
    CloseFd(c);
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

  void CloseFd(Guarded& c) {
    if (c.fd < 0) return;
    c.conn.CountClosed();  // first: a client seeing the close may ask /status
    close(c.fd);
    c.fd = -1;
  }

  void Close(Guarded& c) {
    CloseFd(c);
    Forget(c);
  }

  // Drops the guard's record (and its fd, when it was handed back).
  void Forget(Guarded& c) {
    if (c.armed) event_del(&c.ev);
    if (c.fd >= 0) close(c.fd);  // a child has its own copy now
    conns_.erase(c.self);
    UpdateGauge();
    MaybeFinish();
  }

  // Kept-alive connections close as a drain closes them: after the
  // [limits] drain_idle_timeout, or served once more (handed back to a child,
  // which is still there: children exit when Finish() closes the unpark end)
  // and answered with Connection: close.
  void LingerIdle() {
    draining_.store(true);
    for (auto it = conns_.begin(); it != conns_.end();) {
      Guarded& c = *it++;
      if (!c.BetweenRequests()) continue;
      Settle(c);  // may close it
    }
  }

  void CloseAll() {
    pending_.clear();
    while (!conns_.empty()) {
      conns_.front().conn.Abort(CloseReason::kDrain);
      Close(conns_.front());
    }
    Finish();
  }

  void MaybeFinish() {
    if (parking_over_ && conns_.empty()) Finish();
  }

  // Closing the unpark end is the draining children's signal to exit.
  void Finish() {
    if (unpark_tx_ >= 0) {
      event_del(unpark_event_);
      close(unpark_tx_);
      unpark_tx_ = -1;
    }
    event_base_loopbreak(base_);
  }

  void UpdateGauge() { stats().open_conns.store(conns_.size()); }

  const Listeners& listeners_;
  const LimitsConfig& limits_;
  ConnectionEnv env_;
  Request request_;
  Response response_;
  int park_rx_;
  int unpark_tx_;
  const size_t capacity_;
  event_base* base_ = nullptr;
  event* park_event_ = nullptr;
  event* unpark_event_ = nullptr;
  event* term_event_ = nullptr;
  std::list<Guarded> conns_;
  std::deque<Guarded*> pending_;  // head complete, waiting for channel room
  // max_connections, and never so many that the next hand-off could find no
  // descriptor left (the kernel would drop it unanswered): 503 first.
  const uint64_t max_held_ = MaxHeld(limits_);
  bool parking_over_ = false;
  std::atomic<bool> draining_{false};  // set with parking_over_
  short early_close_ = 0;              // EV_CLOSED where the backend has it
  char chunk_[kGuardReadChunk];
  Buffer inbox_;
  std::string record_;  // a head record on its way back, reused
};

}  // namespace

bool RunGuardLoop(const Listeners& listeners, const LimitsConfig& limits,
                  WorkerStats& stats, int park_rx, int unpark_tx,
                  size_t capacity) {
  GuardLoop loop(listeners, limits, stats, park_rx, unpark_tx, capacity);
  return loop.Run();
}

}  // namespace gearbox
