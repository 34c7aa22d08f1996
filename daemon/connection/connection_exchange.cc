// The waiting half of the connection state machine: a handler that did not
// finish at once is parked with what its response needs, resumed on its
// timer or fds, timed out at its request's deadline (504) or cut short (503).
#include <algorithm>
#include <utility>

#include "daemon/connection/connection.h"
#include "daemon/connection/connection_pending.h"
#include "daemon/connection/cut_off.h"
#include "daemon/connection/pending_spares.h"

namespace gearbox {

void Connection::ParkExchange(std::unique_ptr<Exchange> exchange,
                              const RequestTiming& timing,
                              Clock::time_point now, const Step& step) {
  const Request& request = *env_->request;
  std::unique_ptr<Pending> p =
      env_->spares ? env_->spares->Take() : std::make_unique<Pending>();
  p->exchange = std::move(exchange);
  std::swap(p->response, *env_->response);
  p->request.version_major = request.version_major;
  p->request.version_minor = request.version_minor;
  p->request.keep_alive = request.keep_alive;
  p->request.is_head = request.is_head;
  p->timing = timing;
  p->request_deadline = now + timing.timeout;
  const RequestLog* log = env_->cycle.log;
  if (log && log->enabled()) {
    p->method_path.assign(request.method);
    p->method_path.append(request.path);
    std::string_view mp = p->method_path;
    p->request.method = mp.substr(0, request.method.size());
    p->request.path = mp.substr(request.method.size());
    // Headers are gone after Start(); the log reads only x-request-id.
  }
  pending_ = std::move(p);
  phase_ = Phase::kHandler;
  Wait(step, now);
}

void Connection::Wait(const Step& step, Clock::time_point now) {
  pending_->step = step;
  WaitBegins(pending_->timing, now);  // waiting time and on-CPU runs, per route
  ++wait_seq_;
  SetDeadline(std::min(now + step.timeout, pending_->request_deadline));
}

// The request deadline passed while the handler waits: destroying the
// exchange cancels its waits (the driver removed its fd events first), and
// the client gets 504 on a connection that stays usable.
void Connection::TimeOutExchange(Clock::time_point now) {
  std::unique_ptr<Pending> done = std::move(pending_);
  done->exchange.reset();
  Bump(stats().request_timeouts);
  TimeoutResponse(done->response);
  phase_ = Phase::kIdle;  // Finish() may close instead
  Finish(done->request, done->response, done->timing, done->announce_close);
  if (phase_ == Phase::kIdle) SetDeadline(now + env_->limits->idle_timeout);
  ReleasePending(std::move(done));
}

// Where `done` would have been destroyed: its exchange ends after the
// response is framed, as before.
void Connection::ReleasePending(std::unique_ptr<Pending> done) {
  if (env_->spares) env_->spares->Give(std::move(done));
}

void Connection::ResumeExchange(const Wake& wake, Clock::time_point now) {
  Pending& p = *pending_;
  WaitEnds(p.timing, now);
  const Step step = p.exchange->Resume(wake, p.response);
  if (!step.done()) {
    Wait(step, now);
    return;
  }
  std::unique_ptr<Pending> done = std::move(pending_);
  phase_ = Phase::kIdle;  // Finish() may close instead
  Finish(done->request, done->response, done->timing, done->announce_close);
  if (phase_ == Phase::kIdle) SetDeadline(now + env_->limits->idle_timeout);
  ReleasePending(std::move(done));
}

void Connection::HandlerFdsReady(std::span<const uint8_t> ready,
                                 Clock::time_point now) {
  if (phase_ != Phase::kHandler) return;
  if (now >= pending_->request_deadline) {
    TimeOutExchange(now);
    Process(now);
    return;
  }
  const Step& step = pending_->step;
  Wake wake;
  wake.why = Wake::Why::kFdsReady;
  wake.nfds = step.nfds;
  wake.fds = step.fds;
  for (size_t i = 0; i < step.nfds && i < ready.size(); ++i)
    wake.fds[i].ready = ready[i];
  ResumeExchange(wake, now);
  Process(now);  // pipelined requests behind this one
}

void Connection::CutShort() {
  if (!pending_) return;
  std::unique_ptr<Pending> done = std::move(pending_);
  done->response.Reset();
  done->response.status = 503;
  done->response.body = "stopping\n";
  done->response.close = true;
  phase_ = Phase::kIdle;
  Finish(done->request, done->response, done->timing, true);
  ReleasePending(std::move(done));
}

// The wait's deadline passed: the handler is woken (timer, or an fd wait's
// deadline), unless its request's deadline passed too.
void Connection::HandlerDeadline(Clock::time_point now) {
  if (now >= pending_->request_deadline) {
    TimeOutExchange(now);
    Process(now);  // pipelined requests behind this one
    return;
  }
  const Step& step = pending_->step;
  Wake wake;
  wake.why =
      step.kind == Step::Kind::kFds ? Wake::Why::kDeadline : Wake::Why::kTimer;
  wake.nfds = step.nfds;
  wake.fds = step.fds;
  ResumeExchange(wake, now);
  Process(now);  // pipelined requests behind this one
}

}  // namespace gearbox
