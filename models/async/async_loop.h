// One libevent loop of the async model: its thread, its event_base, its share
// of the connections. Loops share nothing on the hot path.
#pragma once

#include <event2/event.h>
#include <event2/event_struct.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "daemon/connection/pending_spares.h"
#include "daemon/listeners.h"
#include "daemon/metrics/worker_stats.h"
#include "daemon/router.h"
#include "daemon/worker_home.h"
#include "models/accept_util.h"
#include "models/async/async_connection.h"
#include "models/async/async_home.h"

namespace gearbox {

// State every loop of one model shares (read-mostly).
struct AsyncShared {
  const Listeners* listeners = nullptr;
  const RouteSet* routes = nullptr;  // each loop makes its own Router
  const RequestLog* request_log = nullptr;
  LimitsConfig limits;
  std::vector<IpNet> trusted;  // [server] trusted_proxies
  // A callback longer than this is logged and counted; zero: not timed.
  std::chrono::microseconds stall_threshold{0};
  std::atomic<int64_t> open{
      0};  // connections across all loops (max_connections)
  int loops = 1;
  std::atomic<bool> draining{false};
  std::atomic<int> loops_not_accepting{0};  // loops that saw draining
  std::atomic<bool> aborting{false};
};

class AsyncLoop {
 public:
  AsyncLoop(AsyncShared& shared, WorkerStats& stats, int index);
  ~AsyncLoop();
  AsyncLoop(const AsyncLoop&) = delete;
  AsyncLoop& operator=(const AsyncLoop&) = delete;

  // Creates the base and the listener events; returns an error naming the call.
  std::string Init();
  void StartThread();
  // Wakes the loop to look at shared.draining / shared.aborting. Any thread.
  void Wake();
  void Join();
  bool exited() const { return exited_.load(); }

 private:
  friend struct AsyncCallbacks;

  void Run();
  void CloseAll();
  void OnWake();
  // Accepting (async_accept.cc): the gate, one per wake-up with several
  // loops, each loop within its share of the connections.
  void OnAccept(size_t listener_index, bool beyond_share = false);
  void SetAccepting(bool on);
  bool OverShare(int64_t open) const;
  void WaitForOthers();
  void OnShareWaitOver();
  void Adopt(int fd, size_t listener_index, const IpAddress& peer,
             Clock::time_point now);
  void OnTick();
  // Runs one libevent callback; with stall detection on, times it.
  template <typename Fn>
  void Timed(Fn&& callback);
  void OnStall(std::chrono::nanoseconds took);

  // libevent's side of a connection; the machine decides, these wait.
  void OnReadable(AsyncConnection* c);
  void OnWritable(AsyncConnection* c);
  void OnTimer(AsyncConnection* c);
  // Acts on what the machine wants next (the driver core, models/driver.h,
  // with this loop's Port): send, arm read/write/timer/fds, or close.
  void Settle(AsyncConnection* c, Clock::time_point now);
  class Port;
  void ArmIo(AsyncConnection* c, short mode);
  void ArmTimer(AsyncConnection* c, const Interest& interest,
                Clock::time_point now);
  void Close(AsyncConnection* c);
  // A handler's fd wait: one event per fd, registered once per wait and
  // removed when any fires, at the deadline, or when the connection closes;
  // or, for an fd the worker's home watches (or a wake), the home's, which
  // registers nothing per wait.
  void ArmHandlerFds(AsyncConnection* c, const Interest& interest);
  void DisarmHandlerFds(AsyncConnection* c);
  void OnHandlerFd(AsyncFdWaits::Slot* slot, short what);
  // The trampoline of a wait slot's event (async_loop.cc's, timed).
  static event_callback_fn HandlerFdCallback();
  void SettleAllForDrain();
  bool Draining() const {
    return shared_.draining.load(std::memory_order_relaxed);
  }

  AsyncShared& shared_;
  WorkerStats& stats_;
  std::unique_ptr<Router> router_;  // made on the loop's thread, in Run()
  const int index_;
  event_base* base_ = nullptr;
  std::vector<event*> listen_events_;
  bool accepting_ = false;
  bool acknowledged_drain_ = false;
  event* wake_event_ = nullptr;
  event* tick_event_ = nullptr;
  event* share_wait_event_ = nullptr;  // one-shot: WaitForOthers
  bool share_wait_ = false;
  int wake_fd_ = -1;
  AcceptGate gate_;
  std::thread thread_;
  std::atomic<bool> exited_{false};
  // What outlives an exchange on this loop (backend connection pools): its
  // fds stay in this loop's epoll set, its wakes are event activations.
  AsyncHomeDriver home_driver_;
  WorkerHome home_{&home_driver_};

  // Per-loop scratch, reused by every connection: no per-request allocation.
  std::string read_buffer_;
  std::string started_path_;  // of the last request a callback started
  Request request_;
  Response response_;
  PendingSpares spares_;
  ConnectionEnv env_;

  AsyncConnection* head_ = nullptr;  // all connections of this loop
  int64_t conns_ = 0;
  const timeval* idle_tv_ = nullptr;  // libevent common timeouts: O(1) re-arm
  const timeval* header_tv_ = nullptr;
};

}  // namespace gearbox
