#include "daemon/connection/connection.h"

#include <algorithm>
#include <utility>

#include "daemon/connection/connection_pending.h"
#include "daemon/connection/read_blocks.h"
#include "daemon/listeners.h"

namespace gearbox {
namespace {

// Pipelined responses batch up to this before the driver writes them.
constexpr size_t kFlushThreshold = 65536;
// While a handler waits, pipelined input is buffered up to this; then the
// driver stops reading, so a flooding client costs bounded memory.
constexpr size_t kMaxBufferedWhileWaiting = 1 << 20;
// Output capacity kept across requests (no allocation per response); a
// larger buffer, from a big response, is given back once sent.
constexpr size_t kKeptOutCapacity = 4096;

}  // namespace

Connection::Connection(Protocol protocol, const LimitsConfig& limits)
    : Connection(protocol, MakeCodec(protocol, limits)) {}

Connection::Connection(Protocol protocol, std::unique_ptr<ServerCodec> codec)
    : codec_(std::move(codec)), fastcgi_(protocol == Protocol::kFastCgi) {}

Connection::~Connection() = default;

void Connection::Accepted(Clock::time_point now, uint64_t ready_us) {
  phase_ = Phase::kFresh;
  fresh_ = true;
  ready_us_ = ready_us;
  head_started_ = now;
  SetDeadline(now + env_->limits->header_timeout);
}

void Connection::Adopt(const ConnectionProgress& progress,
                       std::string_view record, std::string_view bytes) {
  fresh_ = progress.fresh;
  ready_us_ = progress.ready_us;
  peer_ = progress.peer;
  head_started_ = progress.deadline - env_->limits->header_timeout;
  SetDeadline(progress.deadline);
  if (!record.empty() && !codec_->ResumeHead(record)) {
    Bump(stats().bad_input);  // cannot happen: one binary on both ends
    CloseAfterWrite(CloseReason::kError);
    return;
  }
  in_.Append(bytes);
  // A resumed request is looked at once even without bytes (a complete GET
  // head). No bytes and no request: a fresh connection still owed its first
  // request, or a kept-alive one between requests (the guard holds those).
  more_buffered_ = codec_->InRequest();
  phase_ = codec_->InBody()                        ? Phase::kBody
           : !bytes.empty() || codec_->InRequest() ? Phase::kHead
           : fresh_                                ? Phase::kFresh
                                                   : Phase::kIdle;
}

ConnectionProgress Connection::Progress() const {
  ConnectionProgress p;
  p.fresh = fresh_;
  p.deadline = deadline_;
  p.ready_us = ready_us_;
  p.peer = peer_;
  return p;
}

void Connection::SetDeadline(Clock::time_point t) { deadline_ = t; }

void Connection::Received(std::string_view bytes, Clock::time_point now) {
  if (phase_ == Phase::kClosing || phase_ == Phase::kClosed) return;
  Bump(stats().bytes_in, bytes.size());
  if (phase_ == Phase::kLinger) return;  // dropped
  if (phase_ == Phase::kHandler || !in_.empty()) {
    in_.Append(bytes);
    if (phase_ != Phase::kHandler) Process(now);
    return;
  }
  // Common case: the whole request arrived in one read into the worker's
  // buffer and is served from there without a per-connection copy.
  size_t pos = 0;
  more_buffered_ = false;
  while (ParseOnce(bytes.substr(pos), true, pos, now)) {
  }
  if (pos < bytes.size() && phase_ != Phase::kClosing) {
    in_.Append(bytes.substr(pos));
  }
}

char* Connection::ReadSpace(size_t min) {
  if (in_.capacity() == 0 && env_->read_blocks)
    in_.Adopt(env_->read_blocks->Take());
  return in_.Reserve(min);
}

void Connection::Commit(size_t n, Clock::time_point now) {
  in_.Commit(n);
  Bump(stats().bytes_in, n);
  if (phase_ == Phase::kLinger) return in_.Consume(n);  // dropped
  if (phase_ != Phase::kHandler) Process(now);
}

void Connection::Process(Clock::time_point now) {
  more_buffered_ = false;
  size_t pos = 0;
  while (ParseOnce(in_.view(), false, pos, now)) {
  }
}

// One parse step. `external`: `view` is the caller's buffer starting at
// `pos`'s old value (bytes are consumed by advancing `pos`); otherwise it is
// in_ (consumed from in_).
bool Connection::ParseOnce(std::string_view view, bool external, size_t& pos,
                           Clock::time_point now) {
  if (phase_ == Phase::kHandler || phase_ >= Phase::kLinger) return false;
  if (view.empty() && !codec_->InRequest()) return false;
  if (out_.size() - out_off_ >= kFlushThreshold) {
    more_buffered_ = true;  // write what is there first
    return false;
  }
  ServerCodec::Result r = codec_->Parse(view, *env_->request, out_);
  switch (r.status) {
    case ServerCodec::Status::kIncomplete:
      NoteIncomplete(now);
      return false;
    case ServerCodec::Status::kError:
      Bump(stats().bad_input);
      if (r.error_status) stats().CountStatus(r.error_status);
      CloseAfterAnswer();
      return false;
    case ServerCodec::Status::kClose:
      CloseAfterWrite(CloseReason::kClient);
      return false;
    case ServerCodec::Status::kComplete:
      break;
  }
  ServeRequest(r.consumed, view, external, pos, now);
  return true;
}

// Bytes of a request are buffered but it is not complete: which deadline.
void Connection::NoteIncomplete(Clock::time_point now) {
  if (!codec_->InRequest()) return;  // e.g. FastCGI management records only
  if (phase_ == Phase::kIdle) {
    // The whole head is due within header_timeout of its first byte (not
    // reset per read). A fresh connection keeps the deadline from accept.
    head_started_ = now;
    SetDeadline(now + env_->limits->header_timeout);
  }
  if (phase_ == Phase::kIdle || phase_ == Phase::kFresh) phase_ = Phase::kHead;
  if (phase_ == Phase::kHead && codec_->InBody()) {
    // The head arrived in time; the whole body gets its own bound from here,
    // set once: a trickling body cannot extend it.
    phase_ = Phase::kBody;
    SetDeadline(now + env_->limits->body_timeout);
  }
}

void Connection::ServeRequest(size_t consumed, std::string_view view,
                              bool external, size_t& pos,
                              Clock::time_point now) {
  (void)view;
  const std::string_view listener =
      env_->listeners && listener_ < env_->listeners->size()
          ? std::string_view((*env_->listeners)[listener_].name)
          : std::string_view();
  env_->request->SetOrigin(
      {listener, fastcgi_ ? "fastcgi" : "http", peer_, env_->trusted});
  Request& request = *env_->request;
  Response& response = *env_->response;
  // Asked before the handler runs: the answer is framed with the response.
  const bool announce_close = close_after_response_ && codec_->AnnouncesClose();
  RequestTiming timing;
  std::unique_ptr<Exchange> exchange =
      BeginRequest(env_->cycle, request, ready_us_,
                   env_->limits->request_timeout, now, timing);
  ready_us_ = 0;  // later requests on this connection did not queue
  fresh_ = false;
  response.Reset();
  const Step step = exchange->Resume(Wake{}, response);
  if (step.done()) {
    Finish(request, response, timing, announce_close);
  } else {
    ParkExchange(std::move(exchange), timing, now, step);
    pending_->announce_close = announce_close;
  }
  if (external) {
    pos += consumed;
  } else {
    in_.Consume(consumed);
  }
  if (phase_ == Phase::kIdle) SetDeadline(now + env_->limits->idle_timeout);
}

void Connection::Finish(const Request& request, const Response& response,
                        const RequestTiming& timing, bool announce_close) {
  const bool draining = Draining();
  if (FinishRequest(env_->cycle, *codec_, request, response,
                    draining || announce_close, out_, timing)) {
    CloseAfterWrite(draining ? CloseReason::kDrain : CloseReason::kServer);
    return;
  }
  phase_ = Phase::kIdle;
}

void Connection::CloseAfterWrite(CloseReason reason) {
  phase_ = Phase::kClosing;
  close_reason_ = reason;
  linger_ = false;
}

// Bad input answered: the client may still be sending (the rest of a body,
// FastCGI STDIN records, pipelined requests). Once the answer is sent, the
// connection lingers rather than close on unread bytes.
void Connection::CloseAfterAnswer() {
  CloseAfterWrite(CloseReason::kError);
  // Only an answer is worth it: a framing error that gets none just closes.
  linger_ = out_off_ < out_.size() &&
            env_->limits->lingering_timeout.count() > 0;
}

void Connection::StartLinger(Clock::time_point now) {
  phase_ = Phase::kLinger;
  linger_ = false;
  in_.Consume(in_.size());
  Trim();
  SetDeadline(now + env_->limits->lingering_timeout);
}

void Connection::Sent(size_t n, Clock::time_point now) {
  Bump(stats().bytes_out, n);  // what reached the socket, not what was framed
  out_off_ += n;
  if (out_off_ < out_.size()) return;
  out_.clear();
  out_off_ = 0;
  if (out_.capacity() > kKeptOutCapacity) std::string().swap(out_);
  if (send_armed_) {
    send_armed_ = false;
    // The idle clock starts once the client has its responses.
    if (phase_ == Phase::kIdle) SetDeadline(now + env_->limits->idle_timeout);
  }
}

void Connection::WriteBlocked(Clock::time_point now) {
  if (send_armed_) return;
  // The send timeout bounds the whole remainder, not each chunk: a client
  // that reads one byte a second cannot hold a worker forever.
  send_armed_ = true;
  send_deadline_ = now + env_->limits->send_timeout;
}

void Connection::DeadlinePassed(Clock::time_point now) {
  if (send_armed_ && phase_ != Phase::kHandler) {
    if (now < send_deadline_) return;
    DropOutput();
    CloseAfterWrite(CloseReason::kSendTimeout);  // the client is not reading
    return;
  }
  if (now < deadline_) return;
  switch (phase_) {
    case Phase::kHandler:
      HandlerDeadline(now);
      return;
    case Phase::kFresh:
    case Phase::kHead:
    case Phase::kBody:
      // Not complete in time: 408, which a client mid-request may still read;
      // one that never sent a byte is just closed (as nginx does).
      if (codec_->InRequest()) {
        codec_->AppendError(408, {}, out_);
        stats().CountStatus(408);
      }
      CloseAfterWrite(CloseReason::kHeaderTimeout);
      return;
    case Phase::kIdle:
      CloseAfterWrite(drain_lingering_ ? CloseReason::kDrain
                                       : CloseReason::kIdleTimeout);
      return;
    case Phase::kLinger:
      CloseAfterWrite(close_reason_);
      return;
    case Phase::kClosing:
    case Phase::kClosed:
      return;
  }
}

void Connection::DropOutput() {
  out_.clear();
  out_off_ = 0;
  send_armed_ = false;
}

void Connection::DropPending() {
  if (!pending_) return;
  // Closing cancels a waiting exchange: destroying it is how the handler
  // learns; the request is no longer in flight.
  pending_.reset();
  RequestLeavesFlight(stats());
}

void Connection::PeerClosed() { Abort(CloseReason::kClient); }

void Connection::Abort(CloseReason reason) {
  if (phase_ == Phase::kClosed) return;
  DropPending();
  DropOutput();
  // A lingering connection ends as it began: closed for its bad input.
  CloseAfterWrite(phase_ == Phase::kLinger ? close_reason_ : reason);
}

void Connection::Refuse() {
  codec_->AppendError(503, "Retry-After: 1\r\n", out_);
  Bump(stats().rejected);
  stats().CountStatus(503);
  CloseAfterWrite(CloseReason::kServer);
}

void Connection::CountClosed() {
  if (phase_ == Phase::kClosed) return;
  DropPending();
  phase_ = Phase::kClosed;
  stats().CountClose(close_reason_);
}

void Connection::Trim() {
  if (!in_.empty()) return in_.Shrink();
  if (env_ && env_->read_blocks) return env_->read_blocks->Give(in_.Detach());
  in_.Release();
}

Interest Connection::Next(Clock::time_point now) {
  Interest i;
  if (phase_ == Phase::kIdle && Draining() && in_.empty() && !more_buffered_ &&
      !drain_lingering_) {
    // Draining closes idle keep-alive connections, but not at once: a peer
    // may be sending on one right now (nginx reuses its cached upstream
    // connections, newest first), and a request that meets a close is lost:
    // nginx answers a POST that way 502 and does not retry it. For
    // drain_idle_timeout the connection stays; a request that comes is served
    // with Connection: close (Finish() while draining). A fresh connection
    // was accepted for a request it has not sent yet, and is owed an answer.
    drain_lingering_ = true;
    SetDeadline(std::min(deadline_, now + env_->limits->drain_idle_timeout));
  }
  i.write = out_off_ < out_.size();
  if (linger_ && !i.write) StartLinger(now);
  i.deadline = deadline_;
  i.reason = close_reason_;
  if (send_armed_ && i.write && phase_ != Phase::kHandler) {
    i.kind = Interest::Kind::kWrite;
    i.deadline = send_deadline_;
  } else if (phase_ == Phase::kLinger) {
    i.kind = Interest::Kind::kRead;
    i.shut_write = !write_shut_;
  } else if (phase_ == Phase::kClosing || phase_ == Phase::kClosed) {
    i.kind = Interest::Kind::kClose;
  } else if (phase_ == Phase::kHandler) {
    i.kind = Interest::Kind::kHandler;
    i.read = in_.size() < kMaxBufferedWhileWaiting;
    i.handler_fds = pending_->step.wait_fds();
    i.wait_seq = wait_seq_;
  } else if (more_buffered_) {
    i.kind = Interest::Kind::kProcess;
  } else {
    i.kind = Interest::Kind::kRead;
  }
  i.deadline_changed = i.deadline != armed_;
  return i;
}

}  // namespace gearbox
