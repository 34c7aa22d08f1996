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
  size_t bytes = sizeof(Header) + slots * sizeof(WorkerStats);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    fprintf(stderr, "mmap(%zu bytes, MAP_SHARED|MAP_ANONYMOUS): %s\n", bytes,
            strerror(errno));
    abort();
  }
  auto* header = new (mem) Header();
  auto* base = reinterpret_cast<WorkerStats*>(header + 1);
  for (size_t i = 0; i < slots; ++i) new (&base[i]) WorkerStats();
  return std::shared_ptr<StatsRegion>(new StatsRegion(header, slots));
}

StatsRegion::~StatsRegion() { munmap(header_, MappedBytes()); }

StatsRegion::Totals StatsRegion::Sum() const {
  Totals t;
  AddTo(t);
  return t;
}

void StatsRegion::AddTo(Totals& t) const {
  constexpr auto r = std::memory_order_relaxed;
  t.workers += header_->workers.load(r);
  t.workers_min += header_->workers_min.load(r);
  t.workers_max += header_->workers_max.load(r);
  t.request_timeouts += header_->stuck_requests.load(r);
  for (size_t i = 0; i < slots_; ++i) base_[i].AddTo(t);
}

void WorkerStats::AddTo(StatsTotals& t) const {
  constexpr auto r = std::memory_order_relaxed;
  t.requests += requests.load(r);
  t.bytes_in += bytes_in.load(r);
  t.bytes_out += bytes_out.load(r);
  t.accepted += accepted.load(r);
  for (int c = 0; c < 6; ++c) t.status_class[c] += status_class[c].load(r);
  for (int c = 0; c < static_cast<int>(CloseReason::kCount); ++c)
    t.closed[c] += closed[c].load(r);
  t.rejected += rejected.load(r);
  t.bad_input += bad_input.load(r);
  t.request_timeouts += request_timeouts.load(r);
  t.loop_stalls += loop_stalls.load(r);
  t.parked += parked.load(r);
  t.inflight += inflight.load(r);
  t.open_conns += open_conns.load(r);
  t.busy += busy.load(r);
  t.queue_depth += queue_depth.load(r);
  t.queue_high += queue_high.load(r);
  service.AddTo(t.service);
  queue_wait.AddTo(t.queue_wait);
}

void WorkerStats::AddCounters(const StatsTotals& t) {
  Bump(requests, t.requests);
  Bump(bytes_in, t.bytes_in);
  Bump(bytes_out, t.bytes_out);
  Bump(accepted, t.accepted);
  for (int c = 0; c < 6; ++c) Bump(status_class[c], t.status_class[c]);
  for (int c = 0; c < static_cast<int>(CloseReason::kCount); ++c)
    Bump(closed[c], t.closed[c]);
  Bump(rejected, t.rejected);
  Bump(bad_input, t.bad_input);
  Bump(request_timeouts, t.request_timeouts);
  Bump(loop_stalls, t.loop_stalls);
  Bump(parked, t.parked);
  service.Add(t.service);
  queue_wait.Add(t.queue_wait);
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
