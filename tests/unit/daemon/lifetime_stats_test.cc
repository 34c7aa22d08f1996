// LifetimeStats: counters summed over generations, moved on retirement without
// a jump or a dip, in this process and in a forked child reading the shared
// mapping (as a prefork child serving /status does).
#include "daemon/metrics/lifetime_stats.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/support/wait_until.h"

namespace gearbox {
namespace {

using Regions = std::vector<std::shared_ptr<StatsRegion>>;

void Serve(StatsRegion& region, size_t slot, uint64_t n, uint64_t us) {
  WorkerStats& s = region.Slot(slot);
  for (uint64_t i = 0; i < n; ++i) {
    Bump(s.requests);
    s.CountStatus(200);
    s.service.Record(us);
  }
}

TEST(LifetimeStats, SumsLiveRegionsAndKeepsRetiredCounts) {
  auto lifetime = LifetimeStats::Create();
  auto gen1 = StatsRegion::Create(2, 0), gen2 = StatsRegion::Create(3, 0);
  gen1->SetWorkers(2);
  gen2->SetWorkers(3);
  Serve(*gen1, 0, 5, 100);
  Serve(*gen1, 1, 7, 200);
  Serve(*gen2, 2, 11, 300);
  Bump(gen1->Slot(0).inflight);  // a gauge: not carried on retirement
  const Regions live = {gen1, gen2};

  StatsRegion::Totals t = lifetime->Sum(live);
  EXPECT_EQ(t.requests, 23u);
  EXPECT_EQ(t.status_class[2], 23u);
  EXPECT_EQ(t.service.Count(), 23u);
  EXPECT_EQ(t.service.sum_us, 5 * 100u + 7 * 200u + 11 * 300u);
  EXPECT_EQ(t.workers, 5u);
  EXPECT_EQ(t.inflight, 1u);

  gen1->Slot(0).inflight.store(0);
  lifetime->Retire(*gen1);
  EXPECT_TRUE(gen1->retired());
  t = lifetime->Sum(live);
  EXPECT_EQ(t.requests, 23u) << "moved, not lost or doubled";
  EXPECT_EQ(t.service.Count(), 23u);
  EXPECT_EQ(t.service.sum_us, 5 * 100u + 7 * 200u + 11 * 300u);
  EXPECT_EQ(t.workers, 3u) << "only generation 2 runs";
  lifetime->Retire(*gen1);  // twice: no effect
  EXPECT_EQ(lifetime->Sum(live).requests, 23u);

  // A generation started later sees the retired counts without gen1's region.
  auto gen3 = StatsRegion::Create(1, 0);
  Serve(*gen3, 0, 1, 50);
  EXPECT_EQ(lifetime->Sum(Regions{gen2, gen3}).requests, 24u);
}

// Readers in another thread and in a forked child while generations retire
// one after another: the sum they read never goes down and ends exact.
TEST(LifetimeStats, ReadersNeverSeeADipOrAJumpAcrossRetirement) {
  constexpr int kGenerations = 200;
  constexpr uint64_t kPerGeneration = 1000;
  auto lifetime = LifetimeStats::Create();
  Regions regions;
  for (int g = 0; g < kGenerations; ++g) {
    regions.push_back(StatsRegion::Create(1, 0));
    Serve(*regions.back(), 0, kPerGeneration, 10);
  }
  const uint64_t total = kGenerations * kPerGeneration;
  // Shared with the forked reader: `go` (readers ready: +1 each; then 100 =
  // retiring done) and each reader's count of finished reads.
  struct Shared {
    std::atomic<int> go{0};
    std::atomic<uint64_t> reads[2]{};
  };
  void* mem = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* shared = new (mem) Shared();

  auto read_until_done = [&](int reader) -> int {  // reads that were not exact
    int wrong = 0;
    shared->go.fetch_add(1);
    while (shared->go.load() < 100) {
      const StatsRegion::Totals t = lifetime->Sum(regions);
      wrong += t.requests != total || t.service.Count() != total;
      shared->reads[reader].fetch_add(1);
    }
    return wrong;
  };
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(read_until_done(0) == 0 ? 0 : 1);
  std::atomic<int> thread_wrong{-1};
  std::thread reader([&] { thread_wrong = read_until_done(1); });
  while (shared->go.load() < 2) std::this_thread::yield();
  // After each retirement both readers finish a read before the next one:
  // retirements land in the middle of reads in both processes, however the
  // host schedules them.
  bool interleaved = true;
  for (auto& r : regions) {
    lifetime->Retire(*r);
    const uint64_t child_reads = shared->reads[0].load();
    const uint64_t thread_reads = shared->reads[1].load();
    interleaved = gearbox::testing::WaitUntil(
        [&] {
          return shared->reads[0].load() > child_reads &&
                 shared->reads[1].load() > thread_reads;
        },
        std::chrono::milliseconds(10000), std::chrono::microseconds(50));
    if (!interleaved) break;
  }
  shared->go.store(100);
  reader.join();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(interleaved) << "a reader stopped reading";
  EXPECT_EQ(thread_wrong.load(), 0) << "reads in a thread saw a partial move";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the forked reader saw a partial move";
  EXPECT_EQ(lifetime->Sum(regions).requests, total);
  munmap(mem, sizeof(Shared));
}

}  // namespace
}  // namespace gearbox
