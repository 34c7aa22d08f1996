#include "models/prefork_child.h"

#include <poll.h>
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

namespace gearbox {
namespace {

std::atomic<bool> g_draining{false};

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

// Hands a slow connection to the master's head guard. False when there is no
// guard or the channel is full: then the child serves it itself.
bool Park(BlockingConnection& conn, uint32_t listener,
          const PreforkChildArgs& args, int park_fd) {
  if (park_fd < 0 || conn.in.size() > args.handoff_capacity) return false;
  HandoffHeader header;
  header.listener = listener;
  header.fresh = conn.fresh ? 1 : 0;
  header.deadline_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           conn.deadline.time_since_epoch())
                           .count();
  header.ready_us = conn.ready_us;
  header.replayed_out = conn.unconsumed_replies;
  if (SendConnection(park_fd, conn.fd, header, conn.in.view()) != 0)
    return false;
  close(conn.fd);  // the guard has its own copy; not a close for the stats
  conn.fd = -1;
  return true;
}

}  // namespace

void RunPreforkChild(const PreforkChildArgs& args) {
  const ModelContext& ctx = *args.context;
  std::set<int> keep;
  std::vector<int> listen_fds;
  for (const Listener& l : *ctx.listeners) {
    keep.insert(l.fd);
    listen_fds.push_back(l.fd);
  }
  int park_fd = args.park_fd;
  int unpark_fd = args.unpark_fd;
  for (int fd : {args.ready_fd, park_fd, unpark_fd})
    if (fd >= 0) keep.insert(fd);
  CloseInheritedFds(keep);
  SetUpForkedSignals(&OnTerm);
  if (getppid() == 1) _exit(kChildSetupFailed);  // master already gone

  WorkerStats& stats = ctx.stats->Slot(static_cast<size_t>(args.slot));
  stats.pid.store(getpid());
  stats.busy.store(0);
  RealSleeper sleeper;
  BlockingContext bc;
  bc.cycle = {ctx.router.get(), &stats, ctx.request_log.get(), args.slot};
  bc.limits = &ctx.config.limits;
  bc.draining = &g_draining;
  bc.sleeper = &sleeper;
  // A client waits for a child when a listener has a connection queued or
  // the guard has a head ready: both make an idle keep-alive one give way.
  std::vector<int> waiting_fds = listen_fds;
  if (unpark_fd >= 0) waiting_fds.push_back(unpark_fd);
  IdlePolicy idle{.park = false,
                  .listeners = waiting_fds,
                  .siblings = ctx.stats.get(),
                  .sibling_count = static_cast<size_t>(args.workers),
                  .self_slot = static_cast<size_t>(args.slot),
                  .park_heads_after =
                      park_fd >= 0 ? std::chrono::microseconds(kParkHeadsAfter)
                                   : std::chrono::microseconds(0)};
  IdlePolicy keep_it = idle;
  keep_it.park_heads_after = {};

  if (args.ready_fd >= 0) {
    char byte = 1;
    ssize_t n = write(args.ready_fd, &byte, 1);
    (void)n;
    close(args.ready_fd);
  }
  uint64_t start_requests = stats.requests.load();
  auto serve = [&](BlockingConnection& conn, uint32_t listener) {
    stats.open_conns.store(1);
    if (ServeBlocking(conn, bc, idle) == ConnectionOutcome::kParked &&
        !Park(conn, listener, args, park_fd)) {
      ServeBlocking(conn, bc, keep_it);  // closes the fd and counts why
    }
    conn.fd = -1;
    stats.open_conns.store(0);
    // Not while draining: the child must stay for the heads the guard still
    // hands back (it exits when the guard closes the unpark channel).
    if (!g_draining.load() && args.max_requests > 0 &&
        stats.requests.load() - start_requests >=
            static_cast<uint64_t>(args.max_requests)) {
      _exit(kChildRecycled);
    }
  };

  std::vector<pollfd> pfds;
  Buffer inbox;  // what the guard sends with a connection
  bool accepting = true;
  for (;;) {
    if (accepting && g_draining.load()) {
      accepting = false;
      // No more parking: once every child has closed its copy of the park
      // end, the guard knows none will come, finishes the heads it holds and
      // then closes the unpark end, which is when draining children exit.
      if (park_fd >= 0) close(park_fd);
      park_fd = -1;
    }
    if (!accepting && unpark_fd < 0) break;
    // Several listeners (HTTP + FastCGI) and the guard's channel: poll, then
    // take whichever is ready. All children wait on the same sockets; the
    // kernel hands each connection to one of them and the others get EAGAIN.
    pfds.clear();
    if (unpark_fd >= 0) pfds.push_back({unpark_fd, POLLIN, 0});
    const size_t first_listener = pfds.size();
    if (accepting)
      for (int fd : listen_fds) pfds.push_back({fd, POLLIN, 0});
    int n = poll(pfds.data(), pfds.size(), 1000);
    if (n < 0) continue;  // EINTR: look at g_draining again
    if (getppid() == 1) break;
    // Heads the guard completed first: those clients have waited longest.
    if (unpark_fd >= 0 && pfds[0].revents) {
      inbox.Consume(inbox.size());  // one buffer, reused for every hand-back
      HandoffHeader header;
      int fd =
          ReceiveConnection(unpark_fd, args.handoff_capacity, header, inbox);
      if (fd == kHandoffEnd) {
        close(unpark_fd);
        unpark_fd = -1;
        // Only while draining, in practice (the master holds a copy of the
        // sending end until then); if not, park nothing from now on.
        waiting_fds.pop_back();
        idle.listeners = waiting_fds;
        keep_it.listeners = waiting_fds;
        idle.park_heads_after = {};
        if (park_fd >= 0) close(park_fd);
        park_fd = -1;
      } else if (fd < 0 && errno == EPROTO) {
        // A connection that arrived without its fd or cut short (see
        // ReceiveConnection): the kernel closed it; count the loss.
        stats.CountClose(CloseReason::kError);
      } else if (fd >= 0 && header.listener < listen_fds.size()) {
        BlockingConnection conn(fd, (*ctx.listeners)[header.listener].protocol,
                                ctx.config.limits);
        conn.in.Append(inbox.view());
        conn.fresh = header.fresh != 0;
        conn.in_request = true;
        conn.deadline =
            Clock::time_point(std::chrono::duration_cast<Clock::duration>(
                std::chrono::nanoseconds(header.deadline_ns)));
        conn.ready_us = header.ready_us;
        conn.replayed_out = header.replayed_out;
        serve(conn, header.listener);
      } else if (fd >= 0) {
        close(fd);  // a listener this generation does not have: cannot happen
        stats.CountClose(CloseReason::kError);
      }
    }
    for (size_t i = first_listener; i < pfds.size() && !g_draining.load();
         ++i) {
      if (!(pfds[i].revents & POLLIN)) continue;
      const size_t listener = i - first_listener;
      AcceptError error;
      int fd = AcceptConnection(pfds[i].fd, error);
      if (fd < 0) {
        // Out of descriptors: back off instead of spinning on a ready listener.
        if (error == AcceptError::kExhausted)
          std::this_thread::sleep_for(kAcceptPause);
        continue;
      }
      Bump(stats.accepted);
      BlockingConnection conn(fd, (*ctx.listeners)[listener].protocol,
                              ctx.config.limits);
      conn.ready_us = NowMicros();
      serve(conn, static_cast<uint32_t>(listener));
    }
  }
  _exit(kChildDrained);
}

}  // namespace gearbox
