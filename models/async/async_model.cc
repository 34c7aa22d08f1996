// Connections are spread across loops by letting every loop accept on the
// shared listening sockets: the kernel wakes the loops waiting on a socket and
// one of them wins each accept() (the others see EAGAIN). With loops <= cores
// that costs a few spurious wake-ups under light load and balances by itself
// under heavy load, and it works unchanged for sockets passed by systemd
// (SO_REUSEPORT would need one socket per loop). The alternative, one acceptor
// handing fds to loops, adds a cross-thread hand-off per connection.
#include "models/async/async_model.h"

#include <thread>
#include <vector>

#include "daemon/logging.h"
#include "models/async/async_loop.h"

namespace gearbox {
namespace {

class AsyncModel final : public Model {
 public:
  ~AsyncModel() override {
    if (started_) Drain(std::chrono::steady_clock::now());
  }

  size_t SlotsNeeded(const ModelConfig& config) const override {
    return static_cast<size_t>(Loops(config));
  }

  int TotalWorkers() const override { return static_cast<int>(loops_.size()); }

  static int Loops(const ModelConfig& c) {
    return c.foreground ? 1 : c.async.loops;
  }

  Status Start(const ModelContext& ctx) override {
    ctx_ = ctx;
    shared_.listeners = ctx.listeners;
    shared_.routes = ctx.routes.get();
    shared_.request_log = ctx.request_log.get();
    shared_.limits = ctx.config.limits;
    shared_.trusted = ctx.config.server.trusted_proxies;
    shared_.stall_threshold = ctx.config.async.stall_threshold;
    const int loops = Loops(ctx.config);
    shared_.loops = loops;
    for (int i = 0; i < loops; ++i) {
      auto loop = std::make_unique<AsyncLoop>(
          shared_, ctx.stats->Slot(static_cast<size_t>(i)), i);
      std::string error = loop->Init();
      if (!error.empty()) return Status::Error(error);
      loops_.push_back(std::move(loop));
    }
    // The listener events are armed in Init(), so by the time a thread runs its
    // loop the kernel queue is being served: READY may go out once they run.
    // Before a loop serves: /status shows them from the first request on.
    ctx.stats->SetWorkerBounds(loops, loops, loops);
    for (auto& loop : loops_) loop->StartThread();
    started_ = true;
    LogInfo("model_started", "model=async gen={} loops={}", ctx.generation,
            loops);
    return Status::Ok();
  }

  void StopAccepting() override {
    if (!started_ || shared_.draining.exchange(true)) return;
    for (auto& loop : loops_) loop->Wake();
    // Each loop removes its listener events on its own thread; wait for all.
    const auto limit =
        std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (shared_.loops_not_accepting.load() <
               static_cast<int>(loops_.size()) &&
           std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  void Drain(Deadline deadline) override {
    if (!started_) return;
    StopAccepting();
    started_ = false;
    auto all_exited = [this] {
      for (auto& loop : loops_)
        if (!loop->exited()) return false;
      return true;
    };
    while (!all_exited() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!all_exited()) {
      LogWarn("drain_deadline",
              "model=async gen={} msg=\"closing in-flight connections\"",
              ctx_.generation);
      shared_.aborting.store(true);
      for (auto& loop : loops_) loop->Wake();
    }
    for (auto& loop : loops_) loop->Join();
    loops_.clear();  // closes whatever is left
    LogInfo("model_drained", "model=async gen={}", ctx_.generation);
  }

 private:
  ModelContext ctx_;
  AsyncShared shared_;
  std::vector<std::unique_ptr<AsyncLoop>> loops_;
  bool started_ = false;
};

}  // namespace

std::unique_ptr<Model> MakeAsyncModel() {
  return std::make_unique<AsyncModel>();
}

int AsyncMaxWorkers(const ModelConfig& config) {
  return AsyncModel::Loops(config);
}

}  // namespace gearbox
