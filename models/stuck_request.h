// A request stuck past its deadline: its handler burns CPU (or blocks) after
// the state machine would have answered a waiting one with 504. Blocking
// models look for it in their workers' stats slots, where BeginRequest
// writes each request's start and deadline: prefork cuts the child off
// (request_kill.h), threadpool reports the thread and replaces it.
#pragma once

#include <chrono>
#include <cstdint>

#include "daemon/metrics/worker_stats.h"

namespace gearbox {

// Past its deadline, a request gets this long to finish on its own: a
// waiting handler is answered 504 by the state machine at the deadline, so
// only one burning CPU is still there after it.
inline constexpr std::chrono::milliseconds kStuckGrace{1000};

// The start (us, NowMicros) of the request `stats` shows in flight if it is
// past its deadline + `grace` at `now_us`, else 0.
uint64_t StuckRequestStart(const WorkerStats& stats, uint64_t now_us,
                           std::chrono::microseconds grace);

}  // namespace gearbox
