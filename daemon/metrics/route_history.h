// The route figures of the last 15 minutes, for `/status?window=60s` and
// `gearboxd --advise --window`: a ring of snapshots of each route's running
// totals, one per stats interval (at most one a second), in a shared mapping
// that the supervisor writes and any worker (a prefork child too) reads.
//
// Snapshots of running totals rather than per-interval deltas: a window is
// one subtraction (the totals now minus the snapshot the window's length
// ago), not a sum over up to 900 entries. The ring belongs to a generation,
// as its counters do: after a reload a window reaches back to the reload at
// most (the advice is about the model serving now, and the routes' ids are
// the new config's).
//
// Memory: (kHistorySpan / step + 2) entries of 8 + 48 bytes per route id,
// per generation, mapped when it starts and touched as it fills. The step is
// max(interval, 1 s), made a whole multiple of that when the ring would pass
// kHistoryBudget (many routes): coarser snapshots, the same 15 minutes. With
// 5 routes (6 ids): 261 KiB at a 1 s interval, 27 KiB at 10 s; 1,000 routes:
// 3.9 MiB (11 s steps), or 2.2 MiB at 10 s (20 s steps).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "daemon/metrics/worker_stats.h"

namespace gearbox {

// The longest window /status and --advise accept.
inline constexpr Duration kHistorySpan = std::chrono::minutes(15);
// Snapshots are at least this far apart (a 100 ms stats interval would
// otherwise need 9,000 entries for the same span).
inline constexpr Duration kHistoryStep = std::chrono::seconds(1);
// The ring's size it stays under (but for its 3 entries at least, a window
// then resolving to kHistorySpan): a config's routes cost coarser snapshots
// past it, not memory.
inline constexpr size_t kHistoryBudget = size_t{4} << 20;

// A window to read (/status?window=, --advise --window): a duration from 1 s
// to kHistorySpan. Sets *error (an actionable message, naming `what`) and
// returns nothing otherwise.
std::optional<Duration> ParseWindow(std::string_view text,
                                    std::string_view what, std::string* error);

class RouteHistory {
 public:
  // Maps a ring for `routes` route ids and a generation whose stats interval
  // is `interval`; its first snapshot (all zero) is taken at `started_us`
  // (NowMicros() time base). Aborts if the mapping fails, as StatsRegion.
  static std::unique_ptr<RouteHistory> Create(size_t routes, Duration interval,
                                              uint64_t started_us);
  ~RouteHistory();
  RouteHistory(const RouteHistory&) = delete;
  RouteHistory& operator=(const RouteHistory&) = delete;

  size_t routes() const { return routes_; }
  size_t capacity() const { return capacity_; }
  // How far apart snapshots are at least (see Memory above).
  Duration step() const { return step_; }
  size_t MappedBytes() const;

  // The supervisor only (one writer): the running totals of every route id
  // (`totals` has routes() entries) at `now_us`. Skipped when the previous
  // snapshot is less than step() old.
  void Record(uint64_t now_us, const RouteTotals* totals);

  struct Base {
    uint64_t at_us = 0;               // when the snapshot was taken
    std::vector<RouteTotals> totals;  // routes() entries
  };
  // The newest snapshot taken at or before `at_us`; the oldest one kept when
  // every snapshot is younger (the window reaches past the generation's
  // start: it is "since start").
  Base At(uint64_t at_us) const;

 private:
  struct Header;
  RouteHistory(void* mem, size_t routes, size_t capacity, Duration step);
  std::atomic<uint64_t>* Entry(size_t i) const;  // [0]: time, then 6/route
  size_t EntryWords() const { return 1 + 6 * routes_; }

  Header* header_;
  size_t routes_, capacity_;
  Duration step_;
};

}  // namespace gearbox
