// The connection state machine: one per client connection, the same under
// every model, and free of sockets and clocks (the driver passes `now`).
//
// Events in:  bytes received, bytes sent, the socket would block on a write,
//             the deadline passed, the peer closed, the driver gives it up.
// Interest out: read until T, process buffered requests, wait for the
//             handler until T, write (until T once the socket is full),
//             close with a reason.
//
// It decides everything about a connection, so no model does: header, body,
// idle and send timeouts (408 where the client may read it), 400/413/431/505
// from the codec, 503 refusals, keep-alive or close, pipelining order,
// draining, and every counter. A model only waits (poll, epoll, libevent) and
// chooses who runs the connection (Redis's ae.c and ae_epoll.c split).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "config/config.h"
#include "daemon/buffer.h"
#include "daemon/codec.h"
#include "daemon/connection/request_cycle.h"
#include "daemon/handler.h"

namespace gearbox {

struct Listener;  // daemon/listeners.h

using Clock = std::chrono::steady_clock;

// Where a connection is in its cycle.
enum class Phase : uint8_t {
  kFresh,    // accepted, no byte yet: owed its first request (header_timeout)
  kIdle,     // keep-alive, between requests (idle_timeout)
  kHead,     // part of a request head received (header_timeout)
  kBody,     // head complete, body arriving (body_timeout, from the head's end)
  kHandler,  // a handler is waiting (timer, fds), until its request deadline
  // Bad input was answered and the write side shut: what the client still
  // sends is dropped until it closes (lingering_timeout), so the close meets
  // no unread input (which would reset the connection, answer and all).
  kLinger,
  kClosing,  // the last bytes go out, then close
  kClosed,
};

// What the connection needs next. `write` may accompany any kind: the driver
// sends pending_out() first (blocking models) or alongside (async).
struct Interest {
  enum class Kind : uint8_t {
    kRead,     // wait for bytes until `deadline`, then OnDeadline()
    kProcess,  // complete requests are buffered: call Process() again
    kHandler,  // the handler waits: OnDeadline() at `deadline`
    kWrite,    // the socket is full: wait writable until `deadline`
    kClose,    // close the socket (after `write`, if any), for `reason`
  };
  Kind kind = Kind::kRead;
  bool write = false;  // pending_out() has bytes
  // kHandler: keep reading into the buffer (a hang-up cancels the wait,
  // pipelined bytes queue), false past a bound.
  bool read = false;
  // kRead while lingering: shut the write side first (shutdown(SHUT_WR)),
  // then WriteShut(). The answer is all sent by then.
  bool shut_write = false;
  // The deadline differs from what the driver last reported armed (Armed()).
  bool deadline_changed = false;
  Clock::time_point deadline{};
  // kHandler: the fds the handler waits on (empty: a timer), and which wait
  // this is (a new number per Step, so a driver registers each wait once).
  std::span<const FdWait> handler_fds;
  uint32_t wait_seq = 0;
  CloseReason reason = CloseReason::kServer;
};

class PendingSpares;
class ReadBlocks;

// What a worker gives its connections: how to serve, and where to count.
struct ConnectionEnv {
  RequestCycle cycle;  // router, stats slot, request log, worker index
  const LimitsConfig* limits = nullptr;
  const std::atomic<bool>* draining = nullptr;  // finish, then close
  // Per-worker scratch, reused by every connection: no per-request
  // allocation. A waiting exchange moves its response out of it.
  Request* request = nullptr;
  Response* response = nullptr;
  // Blocks for requests whose handler waits (pending_spares.h); null: each
  // wait allocates its own.
  PendingSpares* spares = nullptr;
  // Read buffers of connections gone idle, for the next one to read into
  // (read_blocks.h); null: each read after an idle spell allocates.
  ReadBlocks* read_blocks = nullptr;
  // [server] trusted_proxies, for Request::Client(); empty: trust no peer.
  std::span<const IpNet> trusted;
  // The generation's listeners, for the name of a connection's (null: none).
  const std::vector<Listener>* listeners = nullptr;
};

// What travels with a connection handed to another process, beside the
// codec's record of what it parsed (Connection::SaveParsed).
struct ConnectionProgress {
  bool fresh = true;
  Clock::time_point deadline{};  // the head's (or, once it came, the body's)
  uint64_t ready_us = 0;         // accept time, for the queue-wait figure
  IpAddress peer;                // the client's end, from accept()
};

class Connection {
 public:
  Connection(Protocol protocol, const LimitsConfig& limits);
  // With a codec of the caller's (one that stops at bodies, say).
  Connection(Protocol protocol, std::unique_ptr<ServerCodec> codec);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The worker that serves it now (threadpool moves connections between the
  // poller and its threads). Counters go to this env's stats slot.
  void Attach(const ConnectionEnv* env) { env_ = env; }
  const ConnectionEnv* env() const { return env_; }

  // --- events --------------------------------------------------------------
  // Where its requests come from (Request::origin): its listener, an index
  // into ConnectionEnv::listeners (an index, so an idle connection stays
  // small), and the peer accept() returned. An adopted connection's peer
  // comes with its progress.
  void SetListener(size_t index) { listener_ = static_cast<uint16_t>(index); }
  void SetPeer(const IpAddress& peer) { peer_ = peer; }
  // Accepted now: the first request is due within header_timeout.
  void Accepted(Clock::time_point now, uint64_t ready_us);
  // Taken over from another process: its progress, the codec's record of
  // what was parsed there (SaveParsed; empty: nothing) and the bytes read
  // after it. A complete head resumes in Phase::kBody.
  void Adopt(const ConnectionProgress& progress, std::string_view record,
             std::string_view bytes);
  // Bytes read from the socket, then processed. `bytes` may be a view into a
  // worker's shared read buffer: what is not consumed is copied.
  void Received(std::string_view bytes, Clock::time_point now);
  // Zero-copy variant: recv() into ReadSpace(), then Commit().
  char* ReadSpace(size_t min);
  size_t ReadRoom() const { return in_.writable(); }
  void Commit(size_t n, Clock::time_point now);
  // Parses and serves what is buffered (pipelining: in order, responses
  // appended to pending_out()). Stops at a wait, a flush threshold, a close.
  void Process(Clock::time_point now);
  // `n` bytes of pending_out() reached the socket (counted in bytes_out).
  void Sent(size_t n, Clock::time_point now);
  // The socket took less than pending_out(): the rest is due by send_timeout
  // (armed once per response remainder, not per chunk).
  void WriteBlocked(Clock::time_point now);
  // The Interest's deadline passed: a handler wake, or a timeout. A waiting
  // handler's deadline is its wait's or its request's (the route's
  // `timeout`), whichever comes first; past the request's, the exchange is
  // destroyed and the client gets 504 (counted in request_timeouts).
  void DeadlinePassed(Clock::time_point now);
  // Some of the handler's fds are ready: `ready[i]` for handler_fds[i]
  // (kFdReadable | kFdWritable | kFdError). The exchange resumes.
  void HandlerFdsReady(std::span<const uint8_t> ready, Clock::time_point now);
  // The driver armed its timer for `deadline` (async: re-arm only on change).
  void Armed(Clock::time_point deadline) { armed_ = deadline; }
  // EOF or a reset from the peer; an I/O error.
  void PeerClosed();
  // The driver shut the write side, as Interest::shut_write asked.
  void WriteShut() { write_shut_ = true; }
  // The model closes it (draining, giving it up, a failed write): `reason`.
  void Abort(CloseReason reason);
  // Refused before it is served (full queue, too many held): 503 with
  // Retry-After, then close.
  void Refuse();
  // A model stopping by force cuts a waiting handler short: 503, then close.
  void CutShort();
  // The worker is cut off mid-handler (cut_off.h): stamps `answer`, a
  // RenderCutOffAnswer() for this connection's protocol, for the request in
  // flight; then counts the timeout once, with the answer when `sent` bytes
  // of it went out, and the close. Both async-signal-safe.
  void StampCutOff(std::span<char> answer, time_t now) const;
  void CountCutOff(size_t sent);

  // --- state ---------------------------------------------------------------
  Interest Next(Clock::time_point now);
  Phase phase() const { return phase_; }
  // Idle at the drain and given drain_idle_timeout already.
  bool drain_lingering() const { return drain_lingering_; }
  bool fresh() const { return fresh_; }
  bool closed() const { return phase_ == Phase::kClosed; }
  // Counts the close (once) into the current env's stats. The driver calls it
  // right after close(fd).
  void CountClosed();
  std::string_view pending_out() const {
    return std::string_view(out_).substr(out_off_);
  }
  bool has_input() const { return !in_.empty(); }
  std::string_view input() const { return in_.view(); }
  // Idle or mid-request connections that wait long keep only what they need.
  void Trim();
  // The model wants the connection back: the next response asks the peer to
  // close after it (where the protocol can say so), rather than a close
  // later, while idle, that could meet the peer's next request. Read when a
  // request starts; a model sets it before it hands the machine bytes.
  void set_close_after_response(bool on) { close_after_response_ = on; }
  ConnectionProgress Progress() const;
  // Handing the connection to another process: appends the codec's record of
  // what it parsed to `record` and returns the input it does not stand for,
  // which travels as bytes. At most the input plus kHeadRecordOverhead (or,
  // for a FastCGI head resumed here, plus max_header_bytes).
  std::string_view SaveParsed(std::string& record) const {
    return in_.view().substr(codec_->SaveHead(in_.view(), record));
  }
  Clock::time_point deadline() const { return deadline_; }
  Clock::time_point head_started() const { return head_started_; }
  uint64_t ready_us() const { return ready_us_; }
  void set_ready_us(uint64_t us) { ready_us_ = us; }

 private:
  struct Pending;  // a request whose handler waits
  friend class PendingSpares;

  bool Draining() const {
    return env_->draining && env_->draining->load(std::memory_order_relaxed);
  }
  WorkerStats& stats() const { return *env_->cycle.stats; }
  // One parse step over `view`; returns false when processing must stop.
  bool ParseOnce(std::string_view view, bool external, size_t& pos,
                 Clock::time_point now);
  void NoteIncomplete(Clock::time_point now);
  void ServeRequest(size_t consumed, std::string_view view, bool external,
                    size_t& pos, Clock::time_point now);
  void ParkExchange(std::unique_ptr<Exchange> exchange,
                    const RequestTiming& timing, Clock::time_point now,
                    const gearbox::Step& step);
  void Wait(const gearbox::Step& step, Clock::time_point now);
  // A waiting request's block, done: to the worker's spares, or freed.
  void ReleasePending(std::unique_ptr<Pending> done);
  void ResumeExchange(const Wake& wake, Clock::time_point now);
  void HandlerDeadline(Clock::time_point now);
  void TimeOutExchange(Clock::time_point now);
  void Finish(const Request& request, const Response& response,
              const RequestTiming& timing, bool announce_close);
  void CloseAfterWrite(CloseReason reason);
  void CloseAfterAnswer();
  void StartLinger(Clock::time_point now);
  void DropOutput();
  void DropPending();
  void SetDeadline(Clock::time_point t);

  const ConnectionEnv* env_ = nullptr;
  std::unique_ptr<ServerCodec> codec_;
  Buffer in_;
  std::string out_;
  size_t out_off_ = 0;
  std::unique_ptr<Pending> pending_;
  Clock::time_point deadline_{};
  Clock::time_point send_deadline_{};
  Clock::time_point armed_{};
  uint32_t wait_seq_ = 0;
  Clock::time_point head_started_{};
  uint64_t ready_us_ = 0;
  Phase phase_ = Phase::kFresh;
  bool fastcgi_ = false;   // (here: in the padding before close_reason_)
  uint16_t listener_ = 0;  // index into ConnectionEnv::listeners
  CloseReason close_reason_ = CloseReason::kServer;
  bool fresh_ = true;
  bool close_after_response_ = false;
  bool send_armed_ = false;
  bool counted_ = false;
  bool more_buffered_ = false;    // Process() stopped with requests left
  bool drain_lingering_ = false;  // idle at the drain: closes at deadline_
  bool linger_ = false;           // kClosing: once sent, linger (kLinger) first
  bool write_shut_ = false;       // kLinger: the driver shut the write side
  IpAddress peer_;                // last: it fills the flags' padding
};

}  // namespace gearbox
