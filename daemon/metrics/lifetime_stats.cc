#include "daemon/metrics/lifetime_stats.h"

#include <sched.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace gearbox {

struct LifetimeStats::Shared {
  // Odd while Retire() is moving counts; readers retry then.
  std::atomic<uint64_t> sequence{0};
  WorkerStats retired;  // counters only; written by Retire() alone
};

std::shared_ptr<LifetimeStats> LifetimeStats::Create() {
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    fprintf(stderr, "mmap(%zu bytes, MAP_SHARED|MAP_ANONYMOUS): %s\n",
            sizeof(Shared), strerror(errno));
    abort();
  }
  return std::shared_ptr<LifetimeStats>(new LifetimeStats(new (mem) Shared()));
}

LifetimeStats::~LifetimeStats() { munmap(shared_, sizeof(Shared)); }

void LifetimeStats::Retire(StatsRegion& drained) {
  if (drained.retired()) return;
  const StatsRegion::Totals t = drained.Sum();
  // A seqlock's writer side (Boehm, "Can seqlocks get along with programming
  // language memory models?"): odd, the data, even (release). The odd step
  // is an acq_rel read-modify-write rather than a store plus a fence, so the
  // data cannot move before it: same ordering, and ThreadSanitizer (which
  // does not model fences; GCC refuses them under -fsanitize=thread) sees it.
  const uint64_t seq =
      shared_->sequence.fetch_add(1, std::memory_order_acq_rel);
  shared_->retired.AddCounters(t);
  drained.MarkRetired();
  shared_->sequence.store(seq + 2, std::memory_order_release);
}

StatsRegion::Totals LifetimeStats::Sum(
    std::span<const std::shared_ptr<StatsRegion>> live) const {
  for (;;) {
    const uint64_t before = shared_->sequence.load(std::memory_order_acquire);
    if (before & 1) {  // a Retire() is under way: it takes microseconds
      sched_yield();
      continue;
    }
    StatsRegion::Totals t;
    shared_->retired.AddTo(t);  // its gauges stay zero
    for (const auto& region : live) {
      if (region && !region->retired()) region->AddTo(t);
    }
    // Boehm's read-dont-modify-write instead of an acquire fence: the data
    // loads above cannot move past it (see Retire()).
    if (shared_->sequence.fetch_add(0, std::memory_order_acq_rel) == before)
      return t;
  }
}

}  // namespace gearbox
