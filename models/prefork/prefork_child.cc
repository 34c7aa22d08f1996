#include "models/prefork/prefork_child.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <set>
#include <vector>

#include "daemon/connection/pending_spares.h"
#include "daemon/connection/read_blocks.h"
#include "daemon/logging.h"
#include "models/accept_util.h"
#include "models/blocking_connection.h"
#include "models/prefork/connection_handoff.h"
#include "models/prefork/forked_process.h"
#include "models/prefork/prefork_held.h"
#include "models/prefork/prefork_model.h"
#include "models/prefork/prefork_policy.h"
#include "models/prefork/request_kill.h"

namespace gearbox {
namespace {

std::atomic<bool> g_draining{false};
// The master retires this (idle) child: stop, as draining would, but exit as
// soon as no connection is in hand, without waiting for the guard.
std::atomic<bool> g_retire{false};

// How long a request head may take to arrive before the child parks the
// connection with the master's head guard. Clients (nginx too) send the head
// right after connecting, so this only catches slow ones, and it bounds what
// a slowloris connection costs a child (this grace, not header_timeout). The
// trade-off: without any grace, a healthy connection accepted a moment before
// its bytes arrive would take the detour through the guard under load.
constexpr std::chrono::milliseconds kParkHeadsAfter{5};

// Idle kept-alive connections a child holds beside the one it serves, once a
// client waits and no sibling is free (HeldConnections). nginx keeps one
// upstream connection per request in flight: at 64 in flight, 8 children
// holding 8 each answer every request on the connection it came on, with no
// hand-off. Beyond that the head guard holds them. More would make each poll
// longer and a busy child's backlog deeper; the guard is the fair (FIFO) path
// for the rest.
constexpr size_t kHeldPerChild = 8;

void OnTerm(int) { g_draining.store(true); }
void OnRetire(int) {
  g_retire.store(true);
  g_draining.store(true);  // a connection taken meanwhile closes after it
}

// One child: its listeners, the guard's channels, its policy and its loop.
class ChildLoop {
 public:
  explicit ChildLoop(const PreforkChildArgs& args)
      : args_(args),
        ctx_(*args.context),
        stats_(ctx_.stats->Slot(static_cast<size_t>(args.slot))),
        park_fd_(args.park_fd),
        unpark_fd_(args.unpark_fd),
        held_(kHeldPerChild, &stats_.idle_held),
        gate_(ctx_.config.limits.max_connections) {}

  void SetUp();
  [[noreturn]] void Run();
  // Clean exits end the handlers first (modules' worker_exit).
  [[noreturn]] void Exit(int code) {
    router_.reset();
    _exit(code);
  }

 private:
  void CloseInherited();
  void FillBlockingContext();
  void MakePolicies();
  void Serve(std::unique_ptr<BlockingConnection> c, uint32_t listener);
  bool KeepHeld(std::unique_ptr<BlockingConnection>& c, uint32_t listener);
  void ServeHeld(int fd);
  void ServeReadyHeld(const std::vector<pollfd>& pfds, size_t first_held);
  void ExpireHeld();
  void MaybeRecycle();
  bool TakeHandBack();
  void AcceptFrom(size_t listener);
  void StopParking();
  int64_t ModelOpen() const;

  const PreforkChildArgs& args_;
  const ModelContext& ctx_;
  WorkerStats& stats_;
  int park_fd_;
  int unpark_fd_;
  std::vector<int> listen_fds_;
  std::vector<int> waiting_fds_;
  RealSleeper sleeper_;
  Request request_;
  Response response_;
  PendingSpares spares_;
  ReadBlocks read_blocks_;
  BlockingContext bc_;
  std::unique_ptr<Router> router_;  // this child's handlers, made after fork
  std::unique_ptr<PreforkPolicy> policy_;      // parks slow heads
  std::unique_ptr<PreforkPolicy> no_parking_;  // when parking failed
  uint64_t start_requests_ = 0;
  HeldConnections held_;
  Buffer inbox_;  // what the guard sends with a connection, reused
  // A connection was just parked for the guard's hand-back (no new client
  // waited): take that before polling. Not when a listener had a client:
  // then the poll takes both, and new clients are not starved.
  bool handback_first_ = false;
  // A held connection with a request, found by the policy's last wait: serve
  // it before polling (-1: none).
  int ready_held_ = -1;
  AcceptGate gate_;
  // Once the gate was found closed (at max_connections, out of descriptors),
  // the listeners stay out of the poll until then.
  Clock::time_point listen_again_at_{};
};

// How soon a child at the cap looks again.
constexpr std::chrono::milliseconds kGateRecheck{50};

void ChildLoop::SetUp() {
  CloseInherited();
  SetUpForkedSignals(&OnTerm);
  struct sigaction retire = {};
  retire.sa_handler = &OnRetire;
  sigemptyset(&retire.sa_mask);
  sigaction(SIGUSR1, &retire, nullptr);          // no SA_RESTART: poll() wakes
  if (getppid() == 1) _exit(kChildSetupFailed);  // master already gone
  // A child sleeps through one handler wait at a time, so the kernel's default
  // 50 us timer slack is 5% of a 1 ms wait, and of the child's throughput.
  // Threadpool threads keep the default: with dozens of threads, coalesced
  // wake-ups are worth more than each thread's punctuality.
  prctl(PR_SET_TIMERSLACK, 1UL);

  stats_.pid.store(getpid());
  stats_.busy.store(0);
  InstallRequestKill(&stats_, ctx_.config.limits);
  router_ = ctx_.routes->MakeRouter(args_.slot, &stats_);
  FillBlockingContext();
  MakePolicies();
  held_.set_guard(park_fd_, args_.handoff_capacity);
  if (args_.ready_fd >= 0) {
    char byte = 1;
    ssize_t n = write(args_.ready_fd, &byte, 1);
    (void)n;
    close(args_.ready_fd);
  }
  start_requests_ = stats_.requests.load();
}

// Closes every fd inherited from the master but the listeners and this
// child's channels (ready, park, unpark).
void ChildLoop::CloseInherited() {
  std::set<int> keep;
  for (const Listener& l : *ctx_.listeners) {
    keep.insert(l.fd);
    listen_fds_.push_back(l.fd);
  }
  for (int fd : {args_.ready_fd, park_fd_, unpark_fd_})
    if (fd >= 0) keep.insert(fd);
  CloseInheritedFds(keep);
}

// What ServeBlocking needs from this child: its router, stats and limits.
void ChildLoop::FillBlockingContext() {
  bc_.env.cycle = {router_.get(), &stats_, ctx_.request_log.get(), args_.slot};
  bc_.env.limits = &ctx_.config.limits;
  bc_.env.trusted = ctx_.config.server.trusted_proxies;
  bc_.env.listeners = ctx_.listeners;
  bc_.env.draining = &g_draining;
  bc_.env.request = &request_;
  bc_.env.response = &response_;
  bc_.env.spares = &spares_;
  bc_.env.read_blocks = &read_blocks_;
  bc_.sleeper = &sleeper_;
}

// The policy that parks slow heads and holds idle connections, and the one
// used when parking failed.
void ChildLoop::MakePolicies() {
  // A client waits for a child when a listener has a connection queued or
  // the guard has a head ready: both make an idle keep-alive one give way.
  waiting_fds_ = listen_fds_;
  if (unpark_fd_ >= 0) waiting_fds_.push_back(unpark_fd_);
  PreforkPolicy::Options o{
      .waiting_fds = waiting_fds_,
      .handback_fd = unpark_fd_,
      .siblings = ctx_.stats.get(),
      .sibling_count = static_cast<size_t>(args_.workers),
      .self_slot = static_cast<size_t>(args_.slot),
      .park_heads_after = park_fd_ >= 0
                              ? std::chrono::microseconds(kParkHeadsAfter)
                              : std::chrono::microseconds(0),
      .draining = &g_draining,
      .held = &held_};
  policy_ = std::make_unique<PreforkPolicy>(o);
  o.park_heads_after = {};
  o.held = nullptr;
  no_parking_ = std::make_unique<PreforkPolicy>(o);
}

void ChildLoop::Serve(std::unique_ptr<BlockingConnection> c,
                      uint32_t listener) {
  stats_.open_conns.store(1);
  SetKillTarget(c.get(), (*ctx_.listeners)[listener].protocol);
  if (ServeBlocking(*c, bc_, *policy_) == ConnectionOutcome::kParked &&
      !KeepHeld(c, listener)) {
    // A slow head (or an idle connection with no room left here) goes to the
    // head guard; without one, or with its channel full, the child serves it
    // itself.
    if (ParkWithGuard(park_fd_, args_.handoff_capacity, *c, listener)) {
      handback_first_ = policy_->gave_way_to_handback();
    } else {
      ServeBlocking(*c, bc_, *no_parking_);  // closes the fd and counts why
    }
  }
  SetKillTarget(nullptr, Protocol::kHttp);
  stats_.open_conns.store(0);
  MaybeRecycle();
}

// An idle keep-alive connection that gave way stays with the child: there is
// room, or it swaps to a held connection that has a request, or the one held
// longest (a client that went quiet, say another nginx's cache) goes to the
// guard to make room: the connections in use stay with the children.
bool ChildLoop::KeepHeld(std::unique_ptr<BlockingConnection>& c,
                         uint32_t listener) {
  if (c->conn.phase() != Phase::kIdle || c->conn.has_input()) return false;
  const int ready = policy_->TakeReadyHeld();
  const bool swap = ready >= 0 && held_.size() <= kHeldPerChild;
  if (!held_.has_room() && !swap && !held_.ParkOldest()) return false;
  held_.Hold(std::move(c), listener, Clock::now());
  ready_held_ = ready;
  return true;
}

// Not while draining: the child must stay for the heads the guard still
// hands back (it exits when the guard closes the unpark channel). The held
// connections go to the guard first; if it cannot take them, later.
void ChildLoop::MaybeRecycle() {
  if (g_draining.load() || args_.max_requests <= 0 ||
      stats_.requests.load() - start_requests_ <
          static_cast<uint64_t>(args_.max_requests))
    return;
  held_.ParkAll();
  if (held_.empty()) Exit(kChildRecycled);
}

void ChildLoop::ServeHeld(int fd) {
  HeldConnections::Held h = held_.Take(fd);
  if (h.c) Serve(std::move(h.c), h.listener);
}

// The held connections this poll found with a request, oldest held first.
// Serving one may hold it again (at the back), so they are taken by fd; once
// a wait found the next one ready (ready_held_), the loop serves that first.
void ChildLoop::ServeReadyHeld(const std::vector<pollfd>& pfds,
                               size_t first_held) {
  for (size_t i = first_held; i < pfds.size() && ready_held_ < 0; ++i)
    if (pfds[i].revents) ServeHeld(pfds[i].fd);
}

// Held connections past their idle timeout (or the drain's linger): the state
// machine closes them, and counts why.
void ChildLoop::ExpireHeld() {
  const Clock::time_point now = Clock::now();
  for (;;) {
    HeldConnections::Held h = held_.TakeExpired(now);
    if (!h.c) return;
    Serve(std::move(h.c), h.listener);
  }
}

// No more parking: once every child has closed its copy of the park end, the
// guard knows none will come, finishes the heads it holds and then closes the
// unpark end, which is when draining children exit.
void ChildLoop::StopParking() {
  if (park_fd_ >= 0) close(park_fd_);
  park_fd_ = -1;
  held_.set_guard(-1, 0);
  policy_->stop_parking();
}

// True when a connection came (and was served).
bool ChildLoop::TakeHandBack() {
  inbox_.Consume(inbox_.size());
  HandoffHeader header;
  int fd =
      ReceiveConnection(unpark_fd_, args_.handoff_capacity, header, inbox_);
  if (fd == kHandoffEnd) {
    close(unpark_fd_);
    unpark_fd_ = -1;
    // Only while draining, in practice (the master holds a copy of the
    // sending end until then); if not, park nothing from now on.
    waiting_fds_.pop_back();
    policy_->set_waiting_fds(waiting_fds_);
    no_parking_->set_waiting_fds(waiting_fds_);
    StopParking();
  } else if (fd < 0 && errno == EPROTO) {
    // A connection that arrived without its fd or cut short (see
    // ReceiveConnection): the kernel closed it; count the loss.
    stats_.CountClose(CloseReason::kError);
  } else if (fd >= 0 && header.listener < listen_fds_.size()) {
    auto c = std::make_unique<BlockingConnection>(
        fd, (*ctx_.listeners)[header.listener].protocol, ctx_.config.limits);
    c->conn.Attach(&bc_.env);
    c->conn.SetListener(header.listener);
    const std::string_view message = inbox_.view();
    c->conn.Adopt(header.progress, message.substr(0, header.record_bytes),
                  message.substr(header.record_bytes));
    Serve(std::move(c), header.listener);
    return true;
  } else if (fd >= 0) {
    close(fd);  // a listener this generation does not have: cannot happen
    stats_.CountClose(CloseReason::kError);
  }
  return false;
}

// Connections the whole model holds, every child's and the guard's, from the
// shared stats region: what max_connections caps. O(slots), slots <=
// max_workers + 1, once per accept (not per poll: the slots are other
// processes' hot lines): less than the accept4() it guards.
int64_t ChildLoop::ModelOpen() const {
  uint64_t open = 0;
  for (size_t i = 0; i < ctx_.stats->size(); ++i) {
    const WorkerStats& s = ctx_.stats->Slot(i);
    open += s.open_conns.load(std::memory_order_relaxed) +
            s.idle_held.load(std::memory_order_relaxed);
  }
  return static_cast<int64_t>(open);
}

void ChildLoop::AcceptFrom(size_t listener) {
  // At the cap, or out of descriptors (a pause), Run() leaves the listeners
  // out of its poll for a while instead of spinning on them.
  const int64_t open = ModelOpen();
  const Clock::time_point now = Clock::now();
  IpAddress peer;
  const int fd = gate_.Accept(listen_fds_[listener], open, now, peer);
  if (fd < 0) {
    if (!gate_.Open(open, now))
      listen_again_at_ = std::max(gate_.paused_until(), now + kGateRecheck);
    return;
  }
  Bump(stats_.accepted);
  auto c = std::make_unique<BlockingConnection>(
      fd, (*ctx_.listeners)[listener].protocol, ctx_.config.limits);
  c->conn.Attach(&bc_.env);
  c->conn.SetListener(listener);
  c->conn.SetPeer(peer);
  c->conn.Accepted(Clock::now(), NowMicros());
  Serve(std::move(c), static_cast<uint32_t>(listener));
}

// Several listeners (HTTP + FastCGI) and the guard's channel: poll, then take
// whichever is ready. All children wait on the same sockets; the kernel hands
// each connection to one of them and the others get EAGAIN.
void ChildLoop::Run() {
  std::vector<pollfd> pfds;
  bool accepting = true;
  for (;;) {
    if (g_retire.load()) {
      held_.ParkAll();
      if (held_.empty()) _exit(kChildRetired);
    }
    if (accepting && g_draining.load()) {
      accepting = false;
      held_.ParkAll();  // the guard lingers them out with the ones it holds
      StopParking();
      held_.Refresh(Clock::now());  // what it could not take: linger here
    }
    if (!accepting && unpark_fd_ < 0 && held_.empty()) break;
    if (ready_held_ >= 0) {
      const int fd = ready_held_;
      ready_held_ = -1;
      ServeHeld(fd);
      continue;
    }
    if (handback_first_) {
      // One try without a poll (EAGAIN: a sibling took it, or a new client
      // was what waited); then poll as usual.
      handback_first_ = false;
      if (unpark_fd_ >= 0 && TakeHandBack()) continue;
    }
    pfds.clear();
    if (unpark_fd_ >= 0) pfds.push_back({unpark_fd_, POLLIN, 0});
    const size_t first_listener = pfds.size();
    const bool gate_open = accepting && Clock::now() >= listen_again_at_;
    if (gate_open)
      for (int fd : listen_fds_) pfds.push_back({fd, POLLIN, 0});
    const size_t first_held = pfds.size();
    for (int fd : held_.fds()) pfds.push_back({fd, POLLIN, 0});
    int timeout_ms = std::min(1000, MillisUntil(held_.earliest()));
    if (accepting && !gate_open)
      timeout_ms = std::min(timeout_ms, MillisUntil(listen_again_at_));
    int n = poll(pfds.data(), pfds.size(), timeout_ms);
    if (n < 0) continue;  // EINTR: look at g_draining again
    // PR_SET_PDEATHSIG tells a child its master died; this is the backstop,
    // once a second while idle rather than a syscall per connection.
    if (n == 0 && getppid() == 1) break;
    // Heads the guard completed first: those clients have waited longest.
    if (unpark_fd_ >= 0 && pfds[0].revents) TakeHandBack();
    ServeReadyHeld(pfds, first_held);
    for (size_t i = first_listener; i < first_held && !g_draining.load(); ++i) {
      if (pfds[i].revents & POLLIN) AcceptFrom(i - first_listener);
    }
    ExpireHeld();
  }
  Exit(kChildDrained);
}

}  // namespace

void RunPreforkChild(const PreforkChildArgs& args) {
  ChildLoop loop(args);
  loop.SetUp();
  loop.Run();
}

}  // namespace gearbox
