// The head guard process's event loop (models/prefork/head_guard.h): what
// the forked guard runs.
#pragma once

#include <cstddef>

#include "config/config.h"
#include "daemon/listeners.h"
#include "daemon/metrics/worker_stats.h"

namespace gearbox {

// What the guard reads per recv(): a parked head's channel message carries
// max_header_bytes plus up to two of these.
inline constexpr size_t kGuardReadChunk = 16384;

// Holds what children park on `park_rx` and hands complete heads back on
// `unpark_tx`, until parking is over and every held connection is dealt
// with, or SIGTERM. Counts into `stats`. False if libevent fails.
bool RunGuardLoop(const Listeners& listeners, const LimitsConfig& limits,
                  WorkerStats& stats, int park_rx, int unpark_tx,
                  size_t capacity);

}  // namespace gearbox
