// Log-linear latency histogram (HdrHistogram-style, 8 sub-buckets per power of
// two, ~12% relative error), fixed size, no allocation on record. Recording is
// a single-writer relaxed increment; snapshots from many workers (threads or
// processes, through the shared stats region) merge by adding buckets.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>

namespace gearbox {

inline constexpr int kSubBucketBits = 3;  // 8 sub-buckets per power of two
inline constexpr int kSubBuckets = 1 << kSubBucketBits;
inline constexpr int kHistogramBuckets =
    8 + (40 - kSubBucketBits) * kSubBuckets;

// Bucket index of a value in microseconds. Values 0..7 get exact buckets.
constexpr int HistogramBucket(uint64_t us) {
  if (us < kSubBuckets) return static_cast<int>(us);
  int exp = 63 - std::countl_zero(us);  // floor(log2(us)) >= 3
  int sub =
      static_cast<int>((us >> (exp - kSubBucketBits)) & (kSubBuckets - 1));
  int idx = kSubBuckets + (exp - kSubBucketBits) * kSubBuckets + sub;
  return idx < kHistogramBuckets ? idx : kHistogramBuckets - 1;
}

// Upper bound (exclusive) of a bucket in microseconds: what percentiles report.
constexpr uint64_t HistogramBucketUpper(int idx) {
  if (idx < kSubBuckets) return static_cast<uint64_t>(idx) + 1;
  int exp = (idx - kSubBuckets) / kSubBuckets + kSubBucketBits;
  int sub = (idx - kSubBuckets) % kSubBuckets;
  return (static_cast<uint64_t>(kSubBuckets + sub + 1))
         << (exp - kSubBucketBits);
}

struct HistogramSnapshot {
  uint64_t buckets[kHistogramBuckets] = {};
  uint64_t sum_us = 0;  // of the recorded values (OpenMetrics _sum)

  void Add(const HistogramSnapshot& other) {
    for (int i = 0; i < kHistogramBuckets; ++i) buckets[i] += other.buckets[i];
    sum_us += other.sum_us;
  }
  // this - earlier (per-interval figures from two cumulative snapshots).
  HistogramSnapshot Since(const HistogramSnapshot& earlier) const {
    HistogramSnapshot d;
    for (int i = 0; i < kHistogramBuckets; ++i)
      d.buckets[i] = buckets[i] >= earlier.buckets[i]
                         ? buckets[i] - earlier.buckets[i]
                         : 0;
    d.sum_us = sum_us >= earlier.sum_us ? sum_us - earlier.sum_us : 0;
    return d;
  }
  uint64_t Count() const {
    uint64_t n = 0;
    for (uint64_t b : buckets) n += b;
    return n;
  }
  // Upper bound of the bucket holding quantile q (0..1), in microseconds; 0 if
  // empty.
  uint64_t Percentile(double q) const {
    uint64_t n = Count();
    if (n == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(n) + 0.5);
    if (rank < 1) rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < kHistogramBuckets; ++i) {
      seen += buckets[i];
      if (seen >= rank) return HistogramBucketUpper(i);
    }
    return HistogramBucketUpper(kHistogramBuckets - 1);
  }
  uint64_t Max() const {
    for (int i = kHistogramBuckets - 1; i >= 0; --i)
      if (buckets[i]) return HistogramBucketUpper(i);
    return 0;
  }
};

class LatencyHistogram {
 public:
  void Record(uint64_t us) {
    auto& b = buckets_[HistogramBucket(us)];
    b.store(b.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    sum_us_.store(sum_us_.load(std::memory_order_relaxed) + us,
                  std::memory_order_relaxed);
  }
  void AddTo(HistogramSnapshot& out) const {
    for (int i = 0; i < kHistogramBuckets; ++i)
      out.buckets[i] += buckets_[i].load(std::memory_order_relaxed);
    out.sum_us += sum_us_.load(std::memory_order_relaxed);
  }
  // Adds a snapshot's counts (single writer, like Record): how a drained
  // generation's latencies join the process-lifetime histogram.
  void Add(const HistogramSnapshot& in) {
    constexpr auto r = std::memory_order_relaxed;
    for (int i = 0; i < kHistogramBuckets; ++i)
      buckets_[i].store(buckets_[i].load(r) + in.buckets[i], r);
    sum_us_.store(sum_us_.load(r) + in.sum_us, r);
  }

 private:
  std::atomic<uint64_t> buckets_[kHistogramBuckets] = {};
  std::atomic<uint64_t> sum_us_{0};
};

}  // namespace gearbox
