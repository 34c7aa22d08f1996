// How a pool of workers follows the load (php-fpm's pm = dynamic with
// pm.max_spawn_rate, uWSGI's cheaper algorithms, Apache's MinSpare/MaxSpare):
// it starts at `min`, grows while every worker is busy and work waits, at
// most `spawn_rate` new workers a second and never past `max`; a worker idle
// for `idle_timeout` retires, down to `min`. The model measures (who is
// busy, whether work waits, who has been idle how long) and acts; this holds
// the decision, the rate bound and the log lines, the same for prefork and
// threadpool.
#pragma once

#include <chrono>
#include <string_view>

#include "config/config.h"

namespace gearbox {

class PoolScaler {
 public:
  using Clock = std::chrono::steady_clock;

  PoolScaler(const PoolLimits& limits, std::string_view model, int generation,
             Clock::time_point now);

  const PoolLimits& limits() const { return limits_; }

  // How many workers to start now, given `current` workers of which `busy`
  // are busy, and whether work waits for one. Grows only when all are busy
  // and work waits; as many as the spawn budget holds (it refills at
  // spawn_rate a second and holds a tenth of a second's worth plus one),
  // never past max. The caller starts them and calls Changed().
  int ToGrow(Clock::time_point now, int current, int busy, bool work_waits);

  // Logs event=workers_changed from/to with the reason ("busy", "idle",
  // "stuck") and its figures.
  void Changed(int from, int to, std::string_view reason,
               std::string_view detail) const;

 private:
  const PoolLimits limits_;
  const std::string_view model_;
  const int generation_;
  double budget_ = 1;
  Clock::time_point refilled_;
};

}  // namespace gearbox
