#include "daemon/metrics/route_history.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "config/loader.h"

namespace gearbox {

// The ring's state, first in the mapping; the entries follow it. A seqlock as
// RouteWindow's: one writer (the supervisor), readers retry while it writes.
struct alignas(64) RouteHistory::Header {
  mutable std::atomic<uint64_t> seq{0};  // odd while being written
  std::atomic<uint64_t> count{0};        // snapshots kept (<= capacity)
  std::atomic<uint64_t> next{0};         // where the next one goes
};

namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

// +2: the snapshot just older than the longest window, and the one being
// replaced.
size_t CapacityFor(Duration step) {
  return static_cast<size_t>((kHistorySpan + step - Duration(1)) / step) + 2;
}

size_t EntryBytes(size_t routes) { return (1 + 6 * routes) * sizeof(uint64_t); }

// The step: max(interval, kHistoryStep), times the least whole factor that
// keeps the ring within kHistoryBudget (a snapshot is only taken at an
// interval's end, so a step between two multiples would be the next one).
Duration StepFor(Duration interval, size_t routes) {
  const Duration base = std::max(interval, kHistoryStep);
  const size_t fit = std::max<size_t>(kHistoryBudget / EntryBytes(routes), 3);
  int64_t factor = 1;
  while (CapacityFor(base * factor) > fit && base * factor < kHistorySpan) {
    ++factor;
  }
  return base * factor;
}

}  // namespace

std::optional<Duration> ParseWindow(std::string_view text,
                                    std::string_view what, std::string* error) {
  const std::optional<Duration> d = ParseDuration(text);
  if (!d || *d < std::chrono::seconds(1) || *d > kHistorySpan) {
    *error = fmt::format(
        "{}{}: want a duration from 1s to {}m, e.g. 60s or 5m", what, text,
        std::chrono::duration_cast<std::chrono::minutes>(kHistorySpan).count());
    return std::nullopt;
  }
  return d;
}

std::unique_ptr<RouteHistory> RouteHistory::Create(size_t routes,
                                                   Duration interval,
                                                   uint64_t started_us) {
  const Duration step = StepFor(interval, routes);
  const size_t capacity = CapacityFor(step);
  const size_t bytes = sizeof(Header) + capacity * EntryBytes(routes);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    fprintf(stderr, "mmap(%zu bytes, MAP_SHARED|MAP_ANONYMOUS): %s\n", bytes,
            strerror(errno));
    abort();
  }
  std::unique_ptr<RouteHistory> h(
      new RouteHistory(mem, routes, capacity, step));
  // The generation's counters start at zero when it does.
  const std::vector<RouteTotals> zero(routes);
  h->Record(started_us, zero.data());
  return h;
}

RouteHistory::RouteHistory(void* mem, size_t routes, size_t capacity,
                           Duration step)
    : header_(new (mem) Header()),
      routes_(routes),
      capacity_(capacity),
      step_(step) {
  // Anonymous pages are zero, a valid std::atomic<uint64_t> each: the
  // entries need no construction (touching them all would make the whole
  // ring resident at once).
  static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));
}

RouteHistory::~RouteHistory() { munmap(header_, MappedBytes()); }

size_t RouteHistory::MappedBytes() const {
  return sizeof(Header) + capacity_ * EntryWords() * sizeof(uint64_t);
}

std::atomic<uint64_t>* RouteHistory::Entry(size_t i) const {
  return reinterpret_cast<std::atomic<uint64_t>*>(header_ + 1) +
         i * EntryWords();
}

void RouteHistory::Record(uint64_t now_us, const RouteTotals* totals) {
  const uint64_t count = header_->count.load(kRelaxed);
  const uint64_t next = header_->next.load(kRelaxed);
  if (count > 0) {
    const uint64_t last =
        Entry((next + capacity_ - 1) % capacity_)[0].load(kRelaxed);
    if (now_us <
        last + static_cast<uint64_t>(
                   std::chrono::duration_cast<std::chrono::microseconds>(step_)
                       .count()))
      return;
  }
  // The odd step is an acq_rel read-modify-write, as RouteWindow::Publish.
  const uint64_t start = header_->seq.fetch_add(1, std::memory_order_acq_rel);
  std::atomic<uint64_t>* e = Entry(next);
  e[0].store(now_us, kRelaxed);
  for (size_t r = 0; r < routes_; ++r) {
    const RouteTotals& t = totals[r];
    const uint64_t v[6] = {t.requests, t.service_us, t.queue_us,
                           t.wait_us,  t.cpu_ns,     t.cpu_samples};
    for (int k = 0; k < 6; ++k) e[1 + 6 * r + k].store(v[k], kRelaxed);
  }
  header_->next.store((next + 1) % capacity_, kRelaxed);
  header_->count.store(std::min<uint64_t>(count + 1, capacity_), kRelaxed);
  header_->seq.store(start + 2, std::memory_order_release);
}

RouteHistory::Base RouteHistory::At(uint64_t at_us) const {
  Base b;
  b.totals.resize(routes_);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint64_t before = header_->seq.load(std::memory_order_acquire);
    const uint64_t count = header_->count.load(kRelaxed);
    const uint64_t oldest =
        (header_->next.load(kRelaxed) + capacity_ - count) % capacity_;
    auto time_of = [&](uint64_t k) {  // k-th oldest
      return Entry((oldest + k) % capacity_)[0].load(kRelaxed);
    };
    // Binary search: the last of the time-ordered snapshots at or before
    // at_us (the oldest when none is). O(log 900).
    uint64_t lo = 0, hi = count;  // the answer is in [lo, hi)
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (time_of(mid) <= at_us) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    const std::atomic<uint64_t>* e = Entry((oldest + lo) % capacity_);
    b.at_us = e[0].load(kRelaxed);
    for (size_t r = 0; r < routes_; ++r) {
      const std::atomic<uint64_t>* v = e + 1 + 6 * r;
      RouteTotals& t = b.totals[r];
      t.requests = v[0].load(kRelaxed);
      t.service_us = v[1].load(kRelaxed);
      t.queue_us = v[2].load(kRelaxed);
      t.wait_us = v[3].load(kRelaxed);
      t.cpu_ns = v[4].load(kRelaxed);
      t.cpu_samples = v[5].load(kRelaxed);
    }
    if ((before & 1) == 0 &&
        header_->seq.fetch_add(0, std::memory_order_acq_rel) == before)
      break;
  }
  return b;
}

}  // namespace gearbox
