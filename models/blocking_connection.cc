#include "models/blocking_connection.h"

#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "daemon/logging.h"
#include "daemon/connection/request_cycle.h"

namespace gearbox {
namespace {

constexpr size_t kReadChunk = 16384;
// Pipelined responses batch up to this before a write.
constexpr size_t kFlushThreshold = 65536;
// Prefork: how long a keep-alive connection must have been idle before it is
// given up for a waiting client. nginx reuses a cached upstream connection
// within microseconds under load; closing one it may be writing to turns a
// POST into a 502.
constexpr std::chrono::milliseconds kHandoffGrace{20};
// threadpool: how long a connection may keep its worker while others queue.
constexpr std::chrono::milliseconds kTurnSlice{10};

int MillisUntil(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - Clock::now())
                  .count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left + 1, 1 << 30));
}

// Waits until `fd` is ready for `events` or the deadline passes. Returns false
// on timeout; true when ready (or on error/hangup, which the next I/O call
// reports).
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  for (;;) {
    int ms = MillisUntil(deadline);
    int n = poll(&p, 1, ms);
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return true;
  }
}

enum class WriteResult { kOk, kTimeout, kError };

WriteResult WriteAll(BlockingConnection& conn, const LimitsConfig& limits,
                     WorkerStats& stats) {
  size_t off = 0;
  Clock::time_point deadline{};
  bool armed = false;
  while (off < conn.out.size()) {
    ssize_t n = send(conn.fd, conn.out.data() + off, conn.out.size() - off,
                     MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // The send timeout bounds the whole response, not each chunk: a client
      // that reads one byte a second cannot hold the worker forever.
      if (!armed) {
        deadline = Clock::now() + limits.send_timeout;
        armed = true;
      }
      if (!WaitFor(conn.fd, POLLOUT, deadline)) return WriteResult::kTimeout;
      continue;
    }
    return WriteResult::kError;
  }
  (void)stats;
  conn.out.clear();
  return WriteResult::kOk;
}

// Serves one complete request: handler steps with sleeps, then the response.
// Returns true when the connection must close after the response.
bool RunRequest(BlockingConnection& conn, const BlockingContext& ctx,
                bool close_after) {
  WorkerStats& stats = *ctx.cycle.stats;
  RequestTiming timing;
  std::unique_ptr<Exchange> exchange =
      BeginRequest(ctx.cycle, conn.request, conn.ready_us, timing);
  conn.ready_us = 0;  // later requests on this connection did not queue
  conn.response.Reset();
  for (;;) {
    Step step = exchange->Resume(conn.response);
    if (step.done()) break;
    // Responses already produced for pipelined requests go out before we wait.
    if (!conn.out.empty() &&
        WriteAll(conn, *ctx.limits, stats) != WriteResult::kOk) {
      conn.response.close = true;
    }
    timing.waited = true;
    if (!ctx.sleeper->SleepFor(*step.wait)) {
      conn.response.Reset();
      conn.response.status = 503;
      conn.response.body = "stopping\n";
      conn.response.close = true;
      break;
    }
  }
  const bool draining =
      ctx.draining && ctx.draining->load(std::memory_order_relaxed);
  return FinishRequest(ctx.cycle, *conn.codec, conn.request, conn.response,
                       draining || close_after, conn.out, timing);
}

// True when this connection's turn is over (threadpool): it has had the worker
// for kTurnSlice and more connections wait than there are idle workers. A
// slice rather than one request per turn: handing every request back to the
// poller cost up to 4x the throughput of fast requests.
bool Contended(const BlockingConnection& conn, const IdlePolicy& idle) {
  return idle.queued && idle.idle_workers &&
         Clock::now() - conn.turn_started >= kTurnSlice &&
         idle.queued->load(std::memory_order_relaxed) >
             idle.idle_workers->load(std::memory_order_relaxed);
}

// True when a listener has a connection waiting to be accepted (one poll()).
bool ListenerPending(const IdlePolicy& idle) {
  pollfd fds[8];
  size_t n = std::min<size_t>(idle.listeners.size(), 8);
  for (size_t i = 0; i < n; ++i) fds[i] = {idle.listeners[i], POLLIN, 0};
  return poll(fds, n, 0) > 0;
}

// True when another prefork child is alive and holds no connection. O(workers)
// scan of the shared slots; workers <= 1024, and only when a client waits.
bool FreeSibling(const IdlePolicy& idle) {
  if (!idle.siblings) return false;
  for (size_t i = 0; i < idle.sibling_count; ++i) {
    if (i == idle.self_slot) continue;
    const WorkerStats& s = idle.siblings->Slot(i);
    if (s.pid.load(std::memory_order_relaxed) != 0 &&
        s.open_conns.load(std::memory_order_relaxed) == 0)
      return true;
  }
  return false;
}

// A connection handed over from another process is parsed again from its
// first buffered byte; replies the peer already got are produced again, and
// dropped here.
void DropReplayedReplies(BlockingConnection& conn, size_t out_before) {
  if (conn.replayed_out == 0) return;
  size_t drop = std::min(conn.replayed_out, conn.out.size() - out_before);
  conn.out.erase(out_before, drop);
  conn.replayed_out -= drop;
}

}  // namespace

bool RealSleeper::SleepFor(std::chrono::microseconds d) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t ns = ts.tv_nsec + d.count() * 1000;
  ts.tv_sec += ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) ==
         EINTR) {
  }
  return true;
}

BlockingConnection::BlockingConnection(int fd, Protocol protocol,
                                       const LimitsConfig& limits)
    : fd(fd), codec(MakeCodec(protocol, limits)) {}

BlockingConnection::~BlockingConnection() {
  if (fd >= 0) close(fd);
}

void CloseBlocking(BlockingConnection& conn, WorkerStats& stats,
                   CloseReason reason) {
  if (conn.fd >= 0) {
    close(conn.fd);
    conn.fd = -1;
    stats.CountClose(reason);
  }
}

void SendAndForget(int fd, std::string_view bytes) {
  // One try: the socket buffer of a fresh connection always has room for this.
  ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)n;
}

ConnectionOutcome ServeBlocking(BlockingConnection& conn,
                                const BlockingContext& ctx,
                                const IdlePolicy& idle) {
  WorkerStats& stats = *ctx.cycle.stats;
  const LimitsConfig& limits = *ctx.limits;
  auto finish = [&](CloseReason reason) {
    if (!conn.out.empty()) WriteAll(conn, limits, stats);
    CloseBlocking(conn, stats, reason);
    return ConnectionOutcome::kClosed;
  };
  std::vector<pollfd> idle_fds;
  const bool draining_now =
      ctx.draining && ctx.draining->load(std::memory_order_relaxed);
  const bool park_heads = idle.park_heads_after.count() > 0 && !draining_now;
  for (;;) {
    // 1. Serve every complete request already buffered (pipelining: responses
    //    are appended in request order and written together).
    for (;;) {
      const size_t out_before = conn.out.size();
      ServerCodec::Result r =
          conn.codec->Parse(conn.in.view(), conn.request, conn.out);
      DropReplayedReplies(conn, out_before);
      if (r.status == ServerCodec::Status::kIncomplete) {
        conn.unconsumed_replies += conn.out.size() - out_before;
        break;
      }
      if (r.status == ServerCodec::Status::kError) {
        Bump(stats.bad_input);
        if (r.error_status) stats.CountStatus(r.error_status);
        return finish(CloseReason::kError);
      }
      if (r.status == ServerCodec::Status::kClose) {
        return finish(CloseReason::kClient);
      }
      conn.in_request = false;
      conn.body_armed = false;
      conn.fresh = false;
      // Prefork: if a client is already waiting and no sibling is free, say
      // "Connection: close" on this response rather than dropping the
      // connection later while idle, when the peer (nginx) may be sending the
      // next request on it: a GET would be retried, a POST would fail.
      const bool hand_off = !idle.listeners.empty() &&
                            conn.codec->AnnouncesClose() &&
                            ListenerPending(idle) && !FreeSibling(idle);
      bool close = RunRequest(conn, ctx, hand_off);
      conn.in.Consume(r.consumed);
      conn.unconsumed_replies = 0;
      if (close) {
        const bool draining =
            ctx.draining && ctx.draining->load(std::memory_order_relaxed);
        return finish(draining ? CloseReason::kDrain : CloseReason::kServer);
      }
      if (conn.out.size() >= kFlushThreshold) break;
      if (Contended(conn, idle) && !conn.in.empty()) {
        if (!conn.out.empty() &&
            WriteAll(conn, limits, stats) != WriteResult::kOk) {
          conn.out.clear();
          return finish(CloseReason::kClient);
        }
        return ConnectionOutcome::kYield;
      }
    }
    // 2. Flush before blocking on the next read.
    if (!conn.out.empty()) {
      WriteResult w = WriteAll(conn, limits, stats);
      if (w != WriteResult::kOk) {
        // The client is not reading (or gone): drop what is left rather than
        // wait for it a second time in finish().
        conn.out.clear();
        return finish(w == WriteResult::kTimeout ? CloseReason::kSendTimeout
                                                 : CloseReason::kClient);
      }
    }
    // 3. Wait for more bytes: idle between requests, or inside one.
    // The codec knows whether buffered bytes are part of a request (FastCGI
    // management records, for one, are not).
    const bool in_request = conn.codec->InRequest();
    if (!in_request) {
      conn.in_request = false;
      // Draining closes idle keep-alive connections; a fresh one was accepted
      // for a request it has not sent yet, and is owed an answer.
      if (!conn.fresh && ctx.draining &&
          ctx.draining->load(std::memory_order_relaxed)) {
        return finish(CloseReason::kDrain);
      }
      if (idle.park && Contended(conn, idle)) {
        conn.in.Release();
        return ConnectionOutcome::kParked;  // its turn comes through the queue
      }
      if (idle.park) {
        // Peek without blocking; park the connection if nothing is there yet.
        char* tail = conn.in.Reserve(kReadChunk);
        ssize_t n = recv(conn.fd, tail, conn.in.writable(), MSG_DONTWAIT);
        if (n > 0) {
          conn.in.Commit(static_cast<size_t>(n));
          Bump(stats.bytes_in, static_cast<uint64_t>(n));
          conn.in_request = true;
          conn.deadline = Clock::now() + limits.header_timeout;
          continue;
        }
        if (n == 0) return finish(CloseReason::kClient);
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          conn.in.Release();
          return ConnectionOutcome::kParked;
        }
        return finish(CloseReason::kClient);
      }
      // Prefork: hold the connection, but give up a keep-alive one when another
      // client waits. A fresh connection is owed its first request: it gets
      // header_timeout and is not handed off.
      idle_fds.clear();
      idle_fds.push_back({conn.fd, POLLIN, 0});
      if (!conn.fresh)
        for (int l : idle.listeners) idle_fds.push_back({l, POLLIN, 0});
      Clock::time_point idle_deadline =
          Clock::now() +
          (conn.fresh ? limits.header_timeout : limits.idle_timeout);
      // Hand-off grace: staggered by slot so that one waiting client makes one
      // child (not all of them) give up its keep-alive connection.
      const Clock::time_point handoff_after =
          Clock::now() + kHandoffGrace +
          std::chrono::milliseconds(5 * std::min<size_t>(idle.self_slot, 16));
      bool readable = false;
      if (conn.fresh && park_heads) {
        // A new client normally sends its head right after connecting; one
        // that has not within the grace goes to the head guard, with the
        // whole head due by header_timeout after accept.
        if (!WaitFor(conn.fd, POLLIN,
                     std::min(idle_deadline,
                              Clock::now() + idle.park_heads_after))) {
          conn.deadline = idle_deadline;
          conn.in_request = true;
          return ConnectionOutcome::kParked;
        }
        readable = true;
      }
      while (!readable) {
        int n =
            poll(idle_fds.data(), idle_fds.size(), MillisUntil(idle_deadline));
        if (n == 0)
          return finish(conn.fresh ? CloseReason::kHeaderTimeout
                                   : CloseReason::kIdleTimeout);
        if (n < 0) {
          if (errno != EINTR) return finish(CloseReason::kError);
          if (!conn.fresh && ctx.draining &&
              ctx.draining->load(std::memory_order_relaxed))
            return finish(CloseReason::kDrain);
          continue;
        }
        if (idle_fds[0].revents) {
          readable = true;
        } else if (FreeSibling(idle) || Clock::now() < handoff_after) {
          // A free child will take the newcomer, or this connection has been
          // idle only briefly (the peer may be about to reuse it: closing now
          // would race its next request). Keep it; look again shortly.
          pollfd self{conn.fd, POLLIN, 0};
          int r = poll(&self, 1, std::min(5, MillisUntil(idle_deadline)));
          if (r > 0) readable = true;
        } else if (ListenerPending(idle)) {
          return finish(CloseReason::kServer);  // a new client is queued
        }
      }
    } else if (!conn.in_request) {
      conn.in_request = true;
      conn.deadline = Clock::now() + limits.header_timeout;
    }
    char* tail = conn.in.Reserve(kReadChunk);
    ssize_t n = recv(conn.fd, tail, conn.in.writable(), 0);
    if (n > 0) {
      conn.in.Commit(static_cast<size_t>(n));
      Bump(stats.bytes_in, static_cast<uint64_t>(n));
      if (!conn.in_request) {
        conn.in_request = true;
        conn.deadline = Clock::now() + limits.header_timeout;
      }
      continue;
    }
    if (n == 0) return finish(CloseReason::kClient);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return finish(CloseReason::kClient);
    if (conn.in_request && conn.codec->InBody() && !conn.body_armed) {
      // The head arrived in time; the whole body gets its own bound from here
      // (set once, not per read: a trickling body cannot extend it).
      conn.body_armed = true;
      conn.deadline = Clock::now() + limits.body_timeout;
    }
    if (idle.park && conn.in_request) {
      // A slow client mid-request: the poller watches it until more bytes come
      // or conn.deadline passes (then 408), and this thread serves someone
      // else. It keeps only the room its bytes need, not a read chunk: a
      // slowloris crowd cost 18 KB a connection before.
      conn.in.Shrink();
      return ConnectionOutcome::kParked;
    }
    Clock::time_point wait_until =
        conn.in_request ? conn.deadline : Clock::now() + limits.idle_timeout;
    // prefork: a head still incomplete after the grace goes to the head guard
    // (the deadline travels with it).
    const bool may_park =
        park_heads && conn.in_request && !conn.codec->InBody();
    if (may_park) {
      const Clock::time_point park_at =
          conn.deadline - limits.header_timeout + idle.park_heads_after;
      if (park_at < wait_until) wait_until = park_at;
    }
    if (!WaitFor(conn.fd, POLLIN, wait_until)) {
      if (may_park && Clock::now() < conn.deadline)
        return ConnectionOutcome::kParked;
      if (conn.in_request) {
        // 408 still makes sense: the client is mid-request and may read it.
        conn.codec->AppendError(408, {}, conn.out);
        stats.CountStatus(408);
        return finish(CloseReason::kHeaderTimeout);
      }
      return finish(CloseReason::kIdleTimeout);
    }
  }
}

}  // namespace gearbox
