// Process-lifetime counters, for scrapers such as Prometheus that compute
// rates from counters and read any decrease as a restart.
//
// Each config generation counts in its own StatsRegion (during a reload the new
// generation serves while the old one drains, so they need separate slots),
// and a fresh region starts at zero. A lifetime counter is therefore the sum of
// the generations that have finished (moved into one "retired" slot here when
// their drain ends) and of those still running. Moving a drained region's
// counts into the retired slot and marking the region retired happen under a
// sequence lock in shared memory, so a reader in any process (prefork children
// inherit the mapping, created before the first fork) sees the counts on one
// side of the move, never on both or neither: the sum neither jumps nor dips.
#pragma once

#include <atomic>
#include <memory>
#include <span>

#include "daemon/metrics/worker_stats.h"

namespace gearbox {

class LifetimeStats {
 public:
  // Maps the shared block. Create it before any worker process is forked.
  static std::shared_ptr<LifetimeStats> Create();
  ~LifetimeStats();
  LifetimeStats(const LifetimeStats&) = delete;
  LifetimeStats& operator=(const LifetimeStats&) = delete;

  // Adds the counters of `drained` to the retired totals and marks it retired.
  // Supervisor thread only (the one writer), once the generation counting in
  // `drained` has stopped writing to it (its Drain() returned). Gauges are not
  // carried: a drained generation has nothing in flight.
  void Retire(StatsRegion& drained);

  // The retired counters plus every region of `live` not retired yet;
  // gauges and workers are those of the live regions. Any thread or process.
  StatsRegion::Totals Sum(
      std::span<const std::shared_ptr<StatsRegion>> live) const;

 private:
  struct Shared;
  explicit LifetimeStats(Shared* shared) : shared_(shared) {}
  Shared* shared_;
};

}  // namespace gearbox
