// The model seam: how requests get workers. One folder per model, one table
// (registry.cc) that lists them. A model never learns which handler it runs.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "config/config.h"
#include "daemon/listeners.h"
#include "daemon/metrics/worker_stats.h"
#include "daemon/request_log.h"
#include "daemon/router.h"

namespace gearbox {

using Deadline = std::chrono::steady_clock::time_point;

struct Status {
  std::string error;  // empty == ok
  bool ok() const { return error.empty(); }
  static Status Ok() { return {}; }
  static Status Error(std::string message) { return {std::move(message)}; }
};

// Everything a generation shares with its model.
struct ModelContext {
  const Listeners* listeners =
      nullptr;  // owned by the supervisor, outlive models
  // Each worker builds its own Router (its own handler instances) from
  // this, on its own thread: routes->MakeRouter(worker index).
  std::shared_ptr<const RouteSet> routes;
  std::shared_ptr<StatsRegion> stats;             // size >= SlotsNeeded(config)
  std::shared_ptr<const RequestLog> request_log;  // access/slow log
  ModelConfig config;
  int generation = 1;
};

class Model {
 public:
  virtual ~Model() = default;
  // The TOML value that selects this model: its row's name in the model
  // table, set by MakeModel (empty for a model made by its factory directly).
  std::string_view Name() const { return name_; }
  // The most workers (so handler instances) a generation of config runs:
  // what a handler that holds backend connections multiplies its pool by.
  // From the model's row in the model table (1 for a model made directly).
  int MaxWorkers(const ModelConfig& config) const {
    return max_workers_ ? max_workers_(config) : 1;
  }
  // Stats slots the model writes to for this config (one per worker, plus
  // extras).
  virtual size_t SlotsNeeded(const ModelConfig& config) const = 0;
  // Returns once the model is accepting on the listeners (that is when READY=1
  // may go out), or an error naming the failed call.
  virtual Status Start(const ModelContext& context) = 0;
  // Supervisor housekeeping, called from the supervisor thread at least every
  // 100 ms and on SIGCHLD (prefork reaps and respawns its children here).
  virtual void Maintain() {}
  // Stops accepting on the listeners and returns once no worker of this model
  // will accept again (bounded: about a second at worst). Accepted connections,
  // including ones whose first request has not arrived yet, are still served.
  // The supervisor calls it before READY=1 on reload, so a client that connects
  // after READY=1 is served by the new generation. Drain() implies it.
  virtual void StopAccepting() = 0;
  // Stops accepting, closes idle connections, finishes in-flight requests;
  // returns when done or at the deadline (then aborts what is left). Two
  // generations (old draining, new serving) may coexist. Safe to call from any
  // thread, once.
  virtual void Drain(Deadline deadline) = 0;
  // The pool's current size in workers (threads, children, loops), for the
  // stats line; busy ones count themselves in their stats slots.
  virtual int TotalWorkers() const = 0;

 private:
  friend std::unique_ptr<Model> MakeModel(std::string_view name);
  std::string_view name_;
  int (*max_workers_)(const ModelConfig& config) = nullptr;
};

// The only list of models. Returns null for an unknown name.
std::unique_ptr<Model> MakeModel(std::string_view name);
// Names in table order: "prefork", "threadpool", "async".
std::span<const std::string_view> ModelNames();
// Each model's name and section keys, in table order: the config loader's
// vocabulary of models.
std::span<const ModelSchema> ModelSchemas();

}  // namespace gearbox
