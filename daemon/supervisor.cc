#include "daemon/supervisor.h"

#include <signal.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <memory>
#include <thread>
#include <vector>

#include "config/loader.h"
#include "daemon/advisor/machine.h"
#include "daemon/handlers/handlers.h"
#include "daemon/handlers/lua/lua_check.h"
#include "daemon/listeners.h"
#include "daemon/logging.h"
#include "daemon/metrics/lifetime_stats.h"
#include "daemon/metrics/route_reporter.h"
#include "daemon/metrics/stats_reporter.h"
#include "daemon/modules/modules.h"
#include "daemon/request_log.h"
#include "daemon/router.h"
#include "models/model.h"

namespace gearbox {
namespace {

using Clock = std::chrono::steady_clock;

// Members go in reverse: the model (its workers) before the modules.
struct Generation {
  int number = 0;
  Config config;
  std::shared_ptr<const Modules> modules;
  std::vector<std::string> route_names;  // route id -> name
  Clock::time_point started;             // when its counters began
  std::shared_ptr<StatsRegion> stats;
  std::shared_ptr<RouteHistory> history;  // its per-route snapshots
  std::unique_ptr<Model> model;
};

// An old generation draining in its own thread while the new one serves.
struct Draining {
  std::unique_ptr<Generation> generation;
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> done;
};

ModelConfig ModelConfigOf(const Config& c) {
  ModelConfig m;
  static_cast<ModelSections&>(m) = c;
  m.server = c.server;
  m.limits = c.limits;
  m.foreground = c.foreground;
  return m;
}

uint64_t MonotonicUsec() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000u +
         static_cast<uint64_t>(ts.tv_nsec) / 1000u;
}

class Supervisor {
 public:
  Supervisor(Config config, std::shared_ptr<const Modules> modules,
             std::string path)
      : path_(std::move(path)),
        first_config_(std::move(config)),
        first_modules_(std::move(modules)) {}

  int Run() {
    auto acquired = AcquireListeners(first_config_.listen);
    if (auto* e = std::get_if<std::string>(&acquired)) {
      LogError("listen_failed", "error={}", LogQuote(*e));
      return 1;
    }
    listeners_ = std::get<Listeners>(std::move(acquired));
    for (const Listener& l : listeners_) {
      LogInfo("listening", "name={} address={} bound={} fd={} systemd={}",
              l.name, l.address, BoundAddress(l.fd), l.fd, l.from_systemd);
    }
    std::string error;
    current_ =
        StartGeneration(first_config_, std::move(first_modules_), &error);
    if (!current_) {
      LogError("start_failed", "error={}", LogQuote(error));
      ReleaseListeners(listeners_);
      return 1;
    }
    sd_notifyf(0, "READY=1\nMAINPID=%d\nSTATUS=%s serving (generation %d)",
               getpid(), current_->config.server.model.c_str(),
               current_->number);
    reporter_ = std::make_unique<StatsReporter>(listeners_);
    route_reporter_ = std::make_unique<RouteReporter>(
        cores_, current_->config.metrics.advice_after);
    int rc = Loop();
    ReleaseListeners(listeners_);
    return rc;
  }

 private:
  // `modules`: what Modules::Load made of config (loaded in this process,
  // before any worker of the generation exists).
  std::unique_ptr<Generation> StartGeneration(
      const Config& config, std::shared_ptr<const Modules> modules,
      std::string* error) {
    auto gen = std::make_unique<Generation>();
    gen->number = ++generation_counter_;
    gen->config = config;
    gen->modules = std::move(modules);
    gen->model = MakeModel(config.server.model);
    if (!gen->model) {
      *error = "unknown model " + config.server.model;
      return nullptr;
    }
    ModelContext ctx;
    ctx.config = ModelConfigOf(config);
    ctx.listeners = &listeners_;
    ctx.generation = gen->number;
    gen->stats = StatsRegion::Create(gen->model->SlotsNeeded(ctx.config),
                                     config.routes.size());
    gen->started = Clock::now();
    ctx.stats = gen->stats;
    ctx.request_log = std::make_shared<RequestLog>(config.log);
    auto routes = std::make_shared<RouteSet>();
    routes->routes = config.routes;
    ServerInfo& info = routes->info;
    info.model = config.server.model;
    info.generation = gen->number;
    info.started = started_;
    info.stats = gen->stats;
    info.lifetime = lifetime_;
    info.live = LiveRegions();
    info.live.push_back(gen->stats);
    info.route_names = RouteNames(config.routes);
    gen->history = RouteHistory::Create(
        gen->stats->route_ids(), config.metrics.interval,
        static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(
                gen->started.time_since_epoch())
                .count()));
    info.history = gen->history;
    info.cores = cores_;
    info.workers = gen->model->MaxWorkers(ctx.config);
    info.lua = config.lua;
    gen->route_names = info.route_names;
    routes->modules = gen->modules;
    ctx.routes = std::move(routes);
    Status s = gen->model->Start(ctx);
    if (!s.ok()) {
      *error = s.error;
      gen->model->Drain(Clock::now());
      return nullptr;
    }
    gen->stats->SetWorkers(gen->model->TotalWorkers());
    LogInfo("generation_started", "gen={} model={} source={}", gen->number,
            config.server.model, LogQuote(config.source));
    return gen;
  }

  // The stats regions of the generations running now (draining, current).
  std::vector<std::shared_ptr<StatsRegion>> LiveRegions() const {
    std::vector<std::shared_ptr<StatsRegion>> live;
    for (const Draining& d : draining_) live.push_back(d.generation->stats);
    if (current_) live.push_back(current_->stats);
    return live;
  }

  void Reload() {
    sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
               static_cast<unsigned long long>(MonotonicUsec()));
    ConfigVocabulary vocab{ModelSchemas(), HandlerSchemas()};
    ConfigResult loaded =
        path_.empty()
            ? LoadConfigString(EmbeddedDefaultConfig(), "<embedded>", vocab)
            : LoadConfigFile(path_, vocab);
    if (auto* e = std::get_if<ConfigError>(&loaded)) {
      return ReloadFailed(e->ToString(), "keeping the running config");
    }
    Config next = std::get<Config>(std::move(loaded));
    next.foreground = first_config_.foreground;
    // A fresh copy of every module file: a rebuilt .so is picked up. A
    // module that fails to load or rejects its route is a config error.
    ModulesResult modules = Modules::Load(next);
    if (auto* e = std::get_if<ConfigError>(&modules)) {
      return ReloadFailed(e->ToString(), "keeping the running config");
    }
    // Edited scripts: checked now, loaded by the new generation's workers.
    if (auto e = CheckLuaScripts(&next)) {
      return ReloadFailed(e->ToString(), "keeping the running config");
    }
    bool listen_changed = next.listen.size() != first_config_.listen.size();
    for (size_t i = 0; !listen_changed && i < next.listen.size(); ++i) {
      listen_changed =
          next.listen[i].address != first_config_.listen[i].address ||
          next.listen[i].protocol != first_config_.listen[i].protocol;
    }
    if (listen_changed) {
      LogWarn("reload_listen_unchanged",
              "msg=\"[[listen]] changes take effect on restart; keeping the "
              "current sockets\"");
    }
    next.listen = first_config_.listen;
    SetLogLevel(next.log.level);
    std::string error;
    auto fresh = StartGeneration(
        next, std::get<std::shared_ptr<const Modules>>(std::move(modules)),
        &error);
    if (!fresh) {
      --generation_counter_;  // the number goes to the next generation that
                              // runs
      return ReloadFailed(error, "keeping the running generation");
    }
    // Both generations accept on the same sockets for a moment; then the old
    // one stops accepting and finishes what it has.
    std::unique_ptr<Generation> old = std::move(current_);
    current_ = std::move(fresh);
    // The old generation stops accepting before READY=1: a client that connects
    // after the reload has finished is served by the new one.
    old->model->StopAccepting();
    // From here a new client reaches the new generation; the old one finishes
    // what it holds (then event=generation_drained).
    LogInfo("generation_draining", "gen={} next={}", old->number,
            current_->number);
    const Deadline deadline =
        Clock::now() + old->config.server.graceful_timeout;
    BeginDrain(std::move(old), deadline);
    last_reload_error_.clear();
    sd_notifyf(0, "READY=1\nSTATUS=%s serving (generation %d)",
               current_->config.server.model.c_str(), current_->number);
  }

  void ReloadFailed(const std::string& error, const char* keeping) {
    LogError("reload_failed", "error={} gen={} msg=\"{}\"", LogQuote(error),
             current_->number, keeping);
    last_reload_error_ = error;
    sd_notifyf(
        0, "READY=1\nSTATUS=reload failed: %s; serving %s (generation %d)",
        error.c_str(), current_->config.server.model.c_str(), current_->number);
  }

  // Drains `gen` in its own thread until done or `deadline`.
  void BeginDrain(std::unique_ptr<Generation> gen, Deadline deadline) {
    Draining d;
    d.done = std::make_shared<std::atomic<bool>>(false);
    Model* model = gen->model.get();
    auto done = d.done;
    d.generation = std::move(gen);
    d.thread = std::thread([model, deadline, done] {
      model->Drain(deadline);
      done->store(true);
    });
    draining_.push_back(std::move(d));
  }

  void ReapDrained() {
    for (auto it = draining_.begin(); it != draining_.end();) {
      it->generation->model->Maintain();
      if (it->done->load()) {
        it->thread.join();
        // Its workers are gone: its counts join the lifetime totals (logged
        // after, so a reader of the log finds them there).
        lifetime_->Retire(*it->generation->stats);
        LogInfo("generation_drained", "gen={}", it->generation->number);
        it = draining_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void Stop(bool fast) {
    sd_notify(0, "STOPPING=1\nSTATUS=stopping");
    const auto timeout = fast ? Clock::duration::zero()
                              : std::chrono::duration_cast<Clock::duration>(
                                    current_->config.server.graceful_timeout);
    LogInfo(
        "stopping", "mode={} gen={} graceful_timeout_ms={}",
        fast ? "fast" : "graceful", current_->number,
        std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
    const Deadline deadline = Clock::now() + timeout;
    BeginDrain(std::move(current_), deadline);
    Clock::time_point next_extend = Clock::now() + std::chrono::seconds(1);
    while (!draining_.empty()) {
      ReapDrained();
      if (!draining_.empty())
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (Clock::now() >= next_extend) {
        // A drain running long: tell systemd it is progress, not a hang, so
        // the stop timeout covers graceful_timeout plus a margin.
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
            deadline - Clock::now() + std::chrono::seconds(5));
        sd_notifyf(
            0,
            "EXTEND_TIMEOUT_USEC=%lld\nSTATUS=draining, %zu generation(s) left",
            static_cast<long long>(std::max<int64_t>(left.count(), 1000000)),
            draining_.size());
        next_extend = Clock::now() + std::chrono::seconds(1);
      }
      if (Clock::now() > deadline + std::chrono::seconds(5)) {
        LogError("drain_stuck", "msg=\"drain overran its deadline; exiting\"");
        _exit(1);
      }
    }
    LogInfo("stopped", "msg=\"all generations drained\"");
  }

  int Loop() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGCHLD})
      sigaddset(&set, s);
    uint64_t watchdog_usec = 0;
    const bool watchdog = sd_watchdog_enabled(0, &watchdog_usec) > 0;
    Clock::time_point next_watchdog = Clock::now();
    Clock::time_point next_stats =
        Clock::now() + current_->config.metrics.interval;
    for (;;) {
      timespec ts{0, 100 * 1000 * 1000};
      int sig = sigtimedwait(&set, nullptr, &ts);
      if (sig == SIGTERM) {
        Stop(false);
        return 0;
      }
      if (sig == SIGINT || sig == SIGQUIT) {
        Stop(true);
        return 0;
      }
      if (sig == SIGHUP) {
        LogInfo("reload_requested", "gen={}", current_->number);
        Reload();
        route_reporter_->SetAdviceAfter(current_->config.metrics.advice_after);
        next_stats = Clock::now() + current_->config.metrics.interval;
      }
      current_->model->Maintain();
      ReapDrained();
      reporter_->Sample();
      const auto now = Clock::now();
      if (watchdog && now >= next_watchdog) {
        sd_notify(0, "WATCHDOG=1");
        next_watchdog = now + std::chrono::microseconds(watchdog_usec / 2);
      }
      if (now >= next_stats) {
        std::string status = reporter_->Report(
            current_->config.server.model, current_->number, *current_->stats,
            current_->model->TotalWorkers());
        route_reporter_->Report(current_->config.server.model, current_->number,
                                current_->model->TotalWorkers(),
                                *current_->stats, current_->history.get(),
                                current_->route_names, current_->started, now);
        if (!last_reload_error_.empty())
          status += "; last reload failed: " + last_reload_error_;
        sd_notifyf(0, "STATUS=%s", status.c_str());
        next_stats = now + current_->config.metrics.interval;
      }
    }
  }

  std::string path_;
  Config first_config_;
  std::shared_ptr<const Modules> first_modules_;
  Listeners listeners_;
  std::unique_ptr<Generation> current_;
  std::list<Draining> draining_;
  int generation_counter_ = 0;
  std::string last_reload_error_;
  std::unique_ptr<StatsReporter> reporter_;
  std::unique_ptr<RouteReporter> route_reporter_;
  const int cores_ = advisor::UsableCores();
  const Clock::time_point started_ = Clock::now();
  // Mapped before the first generation forks anything (prefork children
  // inherit it).
  const std::shared_ptr<LifetimeStats> lifetime_ = LifetimeStats::Create();
};

}  // namespace

int RunSupervisor(Config config, std::shared_ptr<const Modules> modules,
                  std::string config_path) {
  // Signals are taken synchronously by the supervisor thread: block them before
  // any thread exists so every thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  Supervisor supervisor(std::move(config), std::move(modules),
                        std::move(config_path));
  return supervisor.Run();
}

}  // namespace gearbox
