#include "daemon/modules/module_handler.h"

#include <algorithm>
#include <array>
#include <span>
#include <string>
#include <vector>

#include "daemon/logging.h"
#include "daemon/modules/module_host.h"

namespace gearbox {
namespace {

gearbox_str Str(std::string_view s) { return {s.data(), s.size()}; }

// One exchange of a module: the module's state plus the Content-Type it
// set, which the response views until it is written.
class ModuleExchange final : public Exchange {
 public:
  // No reference count per request: the handler keeps the library alive.
  ModuleExchange(const ModuleLibrary& library, void* state)
      : library_(library), state_(state) {}
  // Answered or cancelled: the module frees its state, closes its fds (the
  // connection removed their waits already).
  ~ModuleExchange() override { library_.api().finish(state_); }

  Step Resume(const Wake& wake, Response& response) override {
    gearbox_wake w{};
    w.struct_size = sizeof w;
    w.why = static_cast<uint32_t>(wake.why);
    w.nfds = wake.nfds;
    for (size_t i = 0; i < wake.nfds; ++i) {
      w.fds[i] = {wake.fds[i].fd, wake.fds[i].events, wake.fds[i].ready};
    }
    gearbox_step next{};
    next.struct_size = sizeof next;
    next.kind = GEARBOX_STEP_DONE;
    gearbox_response r{&response, &content_type_, library_.name()};
    library_.api().resume(state_, &w, &r, &next);
    return ToStep(next, response);
  }

 private:
  // The module's answer as a Step; a malformed one is the module's bug: 500.
  Step ToStep(const gearbox_step& next, Response& response) const {
    // GEARBOX_NO_TIMEOUT (or any wait past the route's deadline, itself at
    // most a year) is cut to one that cannot overflow the clock: the route's
    // deadline ends it first.
    constexpr int64_t kLongestUs = int64_t{1} << 50;  // ~35 years
    const auto timeout = std::chrono::microseconds(
        std::clamp<int64_t>(next.timeout_us, 0, kLongestUs));
    if (next.kind == GEARBOX_STEP_DONE) return Step::Done();
    if (next.kind == GEARBOX_STEP_TIMER) return Step::WaitFor(timeout);
    bool ok = next.kind == GEARBOX_STEP_FDS && next.nfds <= kMaxWaitFds;
    Step step = Step::WaitFds({}, timeout);
    for (uint32_t i = 0; ok && i < next.nfds; ++i) {
      const gearbox_fd_wait& f = next.fds[i];
      const uint32_t events = f.events & (kFdReadable | kFdWritable);
      ok = f.fd >= 0 && events != 0 && events == f.events;
      step.fds[i] = {f.fd, static_cast<uint8_t>(events), 0};
      step.nfds = static_cast<uint8_t>(i + 1);
    }
    if (ok) return step;
    LogError("module_bad_step",
             "module={} kind={} nfds={} msg=\"answering 500\"", library_.name(),
             next.kind, next.nfds);
    response.Reset();
    response.status = 500;
    response.body = "internal error\n";
    response.handler_error = true;
    return Step::Done();
  }

  const ModuleLibrary& library_;
  void* state_;
  std::string content_type_;
};

class ModuleHandler final : public Handler {
 public:
  ModuleHandler(std::shared_ptr<const void> owner, const ModuleLibrary& library,
                void* route_handler, const gearbox_worker& worker)
      : owner_(std::move(owner)), library_(library), handler_(route_handler) {
    const gearbox_module& api = library_.api();
    if (!api.worker_init) {
      instance_ = handler_;
      return;
    }
    WorkerInitState init;
    init.worker = &worker;
    SetWorkerInit(&init);
    instance_ = api.worker_init(handler_, &worker);
    SetWorkerInit(nullptr);
    if (!init.failed) return;
    // The module freed what it made: its instance is not used again.
    failed_ = true;
    instance_ = nullptr;
    LogError("module_worker_init_failed",
             "module={} worker={} gen={} msg={} answering=503", library_.name(),
             worker.index, worker.generation, LogQuote(init.error));
  }
  ~ModuleHandler() override {
    const gearbox_module& api = library_.api();
    if (api.worker_exit && !failed_) api.worker_exit(handler_, instance_);
  }

  std::unique_ptr<Exchange> Start(const Request& request) override {
    if (failed_) {
      return Immediately([](Response& response) {
        response.status = 503;
        response.extra_headers = "Retry-After: 1\r\n";
        response.body = "service unavailable\n";
      });
    }
    // The worker's own scratch: no lock, no allocation once warm.
    headers_.clear();
    for (const Header& h : request.headers) {
      headers_.push_back({Str(h.name), Str(h.value)});
    }
    gearbox_request r{};
    r.struct_size = sizeof r;
    r.method = Str(request.method);
    r.target = Str(request.target);
    r.path = Str(request.path);
    r.query = Str(request.query);
    r.headers = headers_.data();
    r.header_count = headers_.size();
    r.body = Str(request.body);
    r.version_major = request.version_major;
    r.version_minor = request.version_minor;
    r.listener = Str(request.origin.listener);
    r.protocol = Str(request.origin.protocol);
    r.client_address = Str(request.Client());
    const std::span<const PathParam> params = request.Params();
    for (size_t i = 0; i < params.size(); ++i) {
      captures_[i] = {Str(params[i].name), Str(params[i].value)};
    }
    r.captures = captures_.data();
    r.capture_count = params.size();
    void* state = library_.api().start(instance_, &r);
    if (!state) {
      LogError("module_start_failed", "module={} path={} msg=\"answering 500\"",
               library_.name(), LogQuote(request.path));
      return Immediately([](Response& response) {
        response.status = 500;
        response.body = "internal error\n";
        response.handler_error = true;
      });
    }
    return std::make_unique<ModuleExchange>(library_, state);
  }

 private:
  std::shared_ptr<const void> owner_;
  const ModuleLibrary& library_;
  void* handler_;
  void* instance_ = nullptr;
  bool failed_ = false;  // worker_init() called worker_error()
  std::vector<gearbox_header> headers_;
  std::array<gearbox_capture, kMaxPathParams> captures_{};
};

}  // namespace

std::unique_ptr<Handler> MakeModuleHandler(std::shared_ptr<const void> owner,
                                           const ModuleLibrary& library,
                                           void* route_handler,
                                           const gearbox_worker& worker) {
  return std::make_unique<ModuleHandler>(std::move(owner), library,
                                         route_handler, worker);
}

}  // namespace gearbox
