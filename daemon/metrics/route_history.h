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
// Memory: (kHistorySpan / max(interval, 1 s) + 2) entries of 8 + 48 bytes
// per route id. With 32 route ids: 1.3 MiB at a 1 s interval, 140 KiB at
// 10 s, per generation, mapped when it starts and touched as it fills.
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
  size_t MappedBytes() const;

  // The supervisor only (one writer): the running totals of every route id
  // (`totals` has routes() entries) at `now_us`. Skipped when the previous
  // snapshot is less than kHistoryStep old.
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
  RouteHistory(void* mem, size_t routes, size_t capacity);
  std::atomic<uint64_t>* Entry(size_t i) const;  // [0]: time, then 6/route
  size_t EntryWords() const { return 1 + 6 * routes_; }

  Header* header_;
  size_t routes_, capacity_;
};

}  // namespace gearbox
