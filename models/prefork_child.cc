#include "models/prefork_child.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <set>
#include <thread>
#include <vector>

#include "daemon/logging.h"
#include "models/accept_util.h"
#include "models/blocking_connection.h"
#include "models/connection_handoff.h"
#include "models/forked_process.h"
#include "models/prefork_model.h"
#include "models/prefork_policy.h"
#include "models/request_kill.h"

namespace gearbox {
namespace {

std::atomic<bool> g_draining{false};
// The master retires this (idle) child: stop, as draining would, but exit as
// soon as no connection is in hand, without waiting for the guard.
std::atomic<bool> g_retire{false};

// How long a request head may take to arrive before the child parks the
// connection with the master's head guard. Clients (nginx too) send the head
// right after connecting, so this only catches slow ones; and it is what a
// crowd of slowloris connections costs: 200 of them take 4 children ~250 ms
// to sort out, instead of pinning them for header_timeout each. Tried: no
// grace at all while other clients wait in the accept queue. Under wrk load
// half of all (healthy) connections had no bytes yet at accept, went through
// the guard, and throughput fell 15%; with the grace, 1 in 10,000 does.
constexpr std::chrono::milliseconds kParkHeadsAfter{5};

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
        unpark_fd_(args.unpark_fd) {}

  void SetUp();
  [[noreturn]] void Run();
  // Clean exits end the handlers first (modules' worker_exit).
  [[noreturn]] void Exit(int code) {
    router_.reset();
    _exit(code);
  }

 private:
  void Serve(BlockingConnection& c, uint32_t listener);
  bool Park(BlockingConnection& c, uint32_t listener);
  bool TakeHandBack();
  void AcceptFrom(size_t listener);
  void StopParking();

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
  BlockingContext bc_;
  std::unique_ptr<Router> router_;  // this child's handlers, made after fork
  std::unique_ptr<PreforkPolicy> policy_;      // parks slow heads
  std::unique_ptr<PreforkPolicy> no_parking_;  // when parking failed
  uint64_t start_requests_ = 0;
  Buffer inbox_;  // what the guard sends with a connection, reused
  // A connection was just parked for the guard's hand-back (no new client
  // waited): take that before polling. Not when a listener had a client:
  // then the poll takes both, and new clients are not starved.
  bool handback_first_ = false;
};

void ChildLoop::SetUp() {
  std::set<int> keep;
  for (const Listener& l : *ctx_.listeners) {
    keep.insert(l.fd);
    listen_fds_.push_back(l.fd);
  }
  for (int fd : {args_.ready_fd, park_fd_, unpark_fd_})
    if (fd >= 0) keep.insert(fd);
  CloseInheritedFds(keep);
  SetUpForkedSignals(&OnTerm);
  struct sigaction retire = {};
  retire.sa_handler = &OnRetire;
  sigemptyset(&retire.sa_mask);
  sigaction(SIGUSR1, &retire, nullptr);          // no SA_RESTART: poll() wakes
  if (getppid() == 1) _exit(kChildSetupFailed);  // master already gone
  // A child sleeps through one handler wait at a time, so the kernel's default
  // 50 us timer slack is 5% of a 1 ms wait, and of the child's throughput
  // (prefork-8 /sleep?ms=1 c=256: 7.1k -> 7.4k req/s). Threadpool threads keep
  // the default: 64 threads waking one by one measured slower (57k -> 54k)
  // than the coalesced wake-ups.
  prctl(PR_SET_TIMERSLACK, 1UL);

  stats_.pid.store(getpid());
  stats_.busy.store(0);
  InstallRequestKill(&stats_);
  router_ = ctx_.routes->MakeRouter(args_.slot);
  bc_.env.cycle = {router_.get(), &stats_, ctx_.request_log.get(), args_.slot};
  bc_.env.limits = &ctx_.config.limits;
  bc_.env.draining = &g_draining;
  bc_.env.request = &request_;
  bc_.env.response = &response_;
  bc_.sleeper = &sleeper_;
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
      .draining = &g_draining};
  policy_ = std::make_unique<PreforkPolicy>(o);
  o.park_heads_after = {};
  no_parking_ = std::make_unique<PreforkPolicy>(o);
  if (args_.ready_fd >= 0) {
    char byte = 1;
    ssize_t n = write(args_.ready_fd, &byte, 1);
    (void)n;
    close(args_.ready_fd);
  }
  start_requests_ = stats_.requests.load();
}

// Hands a slow connection to the master's head guard. False when there is no
// guard or the channel is full: then the child serves it itself.
bool ChildLoop::Park(BlockingConnection& c, uint32_t listener) {
  if (park_fd_ < 0 || c.conn.input().size() > args_.handoff_capacity)
    return false;
  HandoffHeader header;
  header.listener = listener;
  header.progress = c.conn.Progress();
  if (SendConnection(park_fd_, c.fd, header, c.conn.input()) != 0) return false;
  close(c.fd);  // the guard has its own copy; not a close for the stats
  c.fd = -1;
  return true;
}

void ChildLoop::Serve(BlockingConnection& c, uint32_t listener) {
  stats_.open_conns.store(1);
  SetKillTarget(&c, (*ctx_.listeners)[listener].protocol);
  if (ServeBlocking(c, bc_, *policy_) == ConnectionOutcome::kParked) {
    if (Park(c, listener)) {
      handback_first_ = policy_->gave_way_to_handback();
    } else {
      ServeBlocking(c, bc_, *no_parking_);  // closes the fd and counts why
    }
  }
  SetKillTarget(nullptr, Protocol::kHttp);
  stats_.open_conns.store(0);
  // Not while draining: the child must stay for the heads the guard still
  // hands back (it exits when the guard closes the unpark channel).
  if (!g_draining.load() && args_.max_requests > 0 &&
      stats_.requests.load() - start_requests_ >=
          static_cast<uint64_t>(args_.max_requests)) {
    Exit(kChildRecycled);
  }
}

// No more parking: once every child has closed its copy of the park end, the
// guard knows none will come, finishes the heads it holds and then closes the
// unpark end, which is when draining children exit.
void ChildLoop::StopParking() {
  if (park_fd_ >= 0) close(park_fd_);
  park_fd_ = -1;
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
    BlockingConnection c(fd, (*ctx_.listeners)[header.listener].protocol,
                         ctx_.config.limits);
    c.conn.Attach(&bc_.env);
    c.conn.Adopt(header.progress, inbox_.view());
    Serve(c, header.listener);
    return true;
  } else if (fd >= 0) {
    close(fd);  // a listener this generation does not have: cannot happen
    stats_.CountClose(CloseReason::kError);
  }
  return false;
}

void ChildLoop::AcceptFrom(size_t listener) {
  AcceptError error;
  int fd = AcceptConnection(listen_fds_[listener], error);
  if (fd < 0) {
    // Out of descriptors: back off instead of spinning on a ready listener.
    if (error == AcceptError::kExhausted)
      std::this_thread::sleep_for(kAcceptPause);
    return;
  }
  Bump(stats_.accepted);
  BlockingConnection c(fd, (*ctx_.listeners)[listener].protocol,
                       ctx_.config.limits);
  c.conn.Attach(&bc_.env);
  c.conn.Accepted(Clock::now(), NowMicros());
  Serve(c, static_cast<uint32_t>(listener));
}

// Several listeners (HTTP + FastCGI) and the guard's channel: poll, then take
// whichever is ready. All children wait on the same sockets; the kernel hands
// each connection to one of them and the others get EAGAIN.
void ChildLoop::Run() {
  std::vector<pollfd> pfds;
  bool accepting = true;
  for (;;) {
    if (g_retire.load()) _exit(kChildRetired);
    if (accepting && g_draining.load()) {
      accepting = false;
      StopParking();
    }
    if (!accepting && unpark_fd_ < 0) break;
    if (handback_first_) {
      // One try without a poll (EAGAIN: a sibling took it, or a new client
      // was what waited); then poll as usual.
      handback_first_ = false;
      if (unpark_fd_ >= 0 && TakeHandBack()) continue;
    }
    pfds.clear();
    if (unpark_fd_ >= 0) pfds.push_back({unpark_fd_, POLLIN, 0});
    const size_t first_listener = pfds.size();
    if (accepting)
      for (int fd : listen_fds_) pfds.push_back({fd, POLLIN, 0});
    int n = poll(pfds.data(), pfds.size(), 1000);
    if (n < 0) continue;  // EINTR: look at g_draining again
    // PR_SET_PDEATHSIG tells a child its master died; this is the backstop,
    // once a second while idle rather than a syscall per connection.
    if (n == 0 && getppid() == 1) break;
    // Heads the guard completed first: those clients have waited longest.
    if (unpark_fd_ >= 0 && pfds[0].revents) TakeHandBack();
    for (size_t i = first_listener; i < pfds.size() && !g_draining.load();
         ++i) {
      if (pfds[i].revents & POLLIN) AcceptFrom(i - first_listener);
    }
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
