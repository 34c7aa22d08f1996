#include "daemon/metrics/worker_stats.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace gearbox {

std::shared_ptr<StatsRegion> StatsRegion::Create(size_t slots) {
  size_t bytes = slots * sizeof(WorkerStats);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    fprintf(stderr, "mmap(%zu bytes, MAP_SHARED|MAP_ANONYMOUS): %s\n", bytes,
            strerror(errno));
    abort();
  }
  auto* base = static_cast<WorkerStats*>(mem);
  for (size_t i = 0; i < slots; ++i) new (&base[i]) WorkerStats();
  return std::shared_ptr<StatsRegion>(new StatsRegion(base, slots));
}

StatsRegion::~StatsRegion() { munmap(base_, slots_ * sizeof(WorkerStats)); }

StatsRegion::Totals StatsRegion::Sum() const {
  Totals t;
  constexpr auto r = std::memory_order_relaxed;
  for (size_t i = 0; i < slots_; ++i) {
    const WorkerStats& s = base_[i];
    t.requests += s.requests.load(r);
    t.bytes_in += s.bytes_in.load(r);
    t.bytes_out += s.bytes_out.load(r);
    t.accepted += s.accepted.load(r);
    for (int c = 0; c < 6; ++c) t.status_class[c] += s.status_class[c].load(r);
    for (int c = 0; c < static_cast<int>(CloseReason::kCount); ++c)
      t.closed[c] += s.closed[c].load(r);
    t.rejected += s.rejected.load(r);
    t.bad_input += s.bad_input.load(r);
    t.parked += s.parked.load(r);
    t.inflight += s.inflight.load(r);
    t.open_conns += s.open_conns.load(r);
    t.busy += s.busy.load(r);
    t.queue_depth += s.queue_depth.load(r);
    t.queue_high += s.queue_high.load(r);
    s.service.AddTo(t.service);
    s.queue_wait.AddTo(t.queue_wait);
  }
  return t;
}

uint64_t StatsRegion::TakeQueueHigh() {
  uint64_t high = 0;
  for (size_t i = 0; i < slots_; ++i) {
    WorkerStats& s = base_[i];
    // Restart from the current depth so a queue that stays full keeps showing.
    high += s.queue_high.exchange(s.queue_depth.load(std::memory_order_relaxed),
                                  std::memory_order_relaxed);
  }
  return high;
}

void WorkerStats::SetCurrentPath(std::string_view path) {
  uint64_t words[kPathWords] = {};
  memcpy(words, path.data(), std::min(path.size(), sizeof(words)));
  for (size_t i = 0; i < kPathWords; ++i)
    current_path[i].store(words[i], std::memory_order_relaxed);
}

std::string WorkerStats::CurrentPath() const {
  uint64_t words[kPathWords];
  for (size_t i = 0; i < kPathWords; ++i)
    words[i] = current_path[i].load(std::memory_order_relaxed);
  const char* p = reinterpret_cast<const char*>(words);
  return std::string(p, strnlen(p, sizeof(words)));
}

}  // namespace gearbox
