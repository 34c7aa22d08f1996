#include "daemon/metrics/worker_stats.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace gearbox {

// The mapping: the header, the slots, each slot's route counters (slot by
// slot: a worker writes only cache lines of its own), the window's entries.
size_t StatsRegion::MappedBytes(size_t slots, size_t route_ids) {
  return sizeof(Header) + slots * sizeof(WorkerStats) +
         slots * route_ids * sizeof(RouteCounters) +
         route_ids * sizeof(WindowEntry);
}

std::shared_ptr<StatsRegion> StatsRegion::Create(size_t slots, size_t routes) {
  const size_t route_ids = routes + 1;
  const size_t bytes = MappedBytes(slots, route_ids);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    fprintf(stderr, "mmap(%zu bytes, MAP_SHARED|MAP_ANONYMOUS): %s\n", bytes,
            strerror(errno));
    abort();
  }
  return std::shared_ptr<StatsRegion>(new StatsRegion(mem, slots, route_ids));
}

StatsRegion::StatsRegion(void* mem, size_t slots, size_t route_ids)
    : header_(new (mem) Header()),
      base_(reinterpret_cast<WorkerStats*>(header_ + 1)),
      slots_(slots),
      route_ids_(route_ids) {
  // Anonymous pages are zero, a valid RouteCounters and WindowEntry each:
  // they need no construction (touching them would make every route of
  // every slot resident at once).
  static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t));
  static_assert(sizeof(Header) % alignof(WorkerStats) == 0);
  static_assert(sizeof(WorkerStats) % alignof(RouteCounters) == 0);
  for (size_t i = 0; i < slots; ++i) {
    WorkerStats* slot = new (&base_[i]) WorkerStats();
    slot->routes = RouteBase() + i * route_ids;
    slot->route_ids = route_ids;
  }
}

RouteCounters* StatsRegion::RouteBase() const {
  return reinterpret_cast<RouteCounters*>(base_ + slots_);
}

StatsRegion::WindowEntry* StatsRegion::WindowBase() const {
  return reinterpret_cast<WindowEntry*>(RouteBase() + slots_ * route_ids_);
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
  t.open_conns += open_conns.load(r) + idle_held.load(r);
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

std::vector<RouteTotals> StatsRegion::SumRoutes() const {
  std::vector<RouteTotals> out(route_ids_);
  for (size_t i = 0; i < slots_; ++i) {
    const WorkerStats& slot = base_[i];
    // Route counters are bumped before the slot's own: a slot with none
    // answered has nothing to add (and its pages stay untouched).
    if (slot.requests.load(std::memory_order_relaxed) == 0) continue;
    for (size_t r = 0; r < route_ids_; ++r) out[r].Add(slot.routes[r]);
  }
  return out;
}

void RouteTotals::Add(const RouteCounters& c) {
  constexpr auto r = std::memory_order_relaxed;
  requests += c.requests.load(r);
  service_us += c.service_us.load(r);
  queue_us += c.queue_us.load(r);
  wait_us += c.wait_us.load(r);
  cpu_ns += c.cpu_ns.load(r);
  cpu_samples += c.cpu_samples.load(r);
  handler_errors += c.handler_errors.load(r);
}

RouteTotals RouteTotals::Since(const RouteTotals& earlier) const {
  auto minus = [](uint64_t a, uint64_t b) { return a >= b ? a - b : 0; };
  RouteTotals d;
  d.requests = minus(requests, earlier.requests);
  d.service_us = minus(service_us, earlier.service_us);
  d.queue_us = minus(queue_us, earlier.queue_us);
  d.wait_us = minus(wait_us, earlier.wait_us);
  d.cpu_ns = minus(cpu_ns, earlier.cpu_ns);
  d.cpu_samples = minus(cpu_samples, earlier.cpu_samples);
  d.handler_errors = minus(handler_errors, earlier.handler_errors);
  return d;
}

namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

}  // namespace

// Seqlock writer (one writer: the supervisor thread), as LifetimeStats: the
// odd step is an acq_rel read-modify-write, not a store and a fence (GCC
// refuses atomic_thread_fence under -fsanitize=thread).
void StatsRegion::PublishWindow(const RouteWindow& w) {
  const uint64_t start =
      header_->window_seq.fetch_add(1, std::memory_order_acq_rel);
  header_->window_interval_us.store(w.interval_us, kRelaxed);
  header_->window_workers.store(w.workers, kRelaxed);
  WindowEntry* e = WindowBase();
  for (size_t i = 0; i < route_ids_; ++i) {
    const RouteTotals t = i < w.routes.size() ? w.routes[i] : RouteTotals{};
    const uint64_t v[6] = {t.requests, t.service_us, t.queue_us,
                           t.wait_us,  t.cpu_ns,     t.cpu_samples};
    for (int k = 0; k < 6; ++k) e[i].v[k].store(v[k], kRelaxed);
  }
  header_->window_seq.store(start + 2, std::memory_order_release);
}

// Seqlock reader: retries while a write is in progress (it takes microseconds
// once per interval), and gives up after a few tries with what it read. The
// second sequence read is a read-dont-modify-write (acq_rel) instead of an
// acquire fence: the data loads cannot move after it.
RouteWindow StatsRegion::ReadWindow() const {
  RouteWindow w;
  w.routes.resize(route_ids_);
  const WindowEntry* e = WindowBase();
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint64_t before = header_->window_seq.load(std::memory_order_acquire);
    w.interval_us = header_->window_interval_us.load(kRelaxed);
    w.workers = header_->window_workers.load(kRelaxed);
    for (size_t i = 0; i < route_ids_; ++i) {
      RouteTotals& t = w.routes[i];
      t.requests = e[i].v[0].load(kRelaxed);
      t.service_us = e[i].v[1].load(kRelaxed);
      t.queue_us = e[i].v[2].load(kRelaxed);
      t.wait_us = e[i].v[3].load(kRelaxed);
      t.cpu_ns = e[i].v[4].load(kRelaxed);
      t.cpu_samples = e[i].v[5].load(kRelaxed);
    }
    if ((before & 1) == 0 &&
        header_->window_seq.fetch_add(0, std::memory_order_acq_rel) == before)
      break;
  }
  return w;
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
