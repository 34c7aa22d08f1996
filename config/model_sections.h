// The models' own sections of the config ([prefork], [threadpool], [async]):
// their typed structs, and the description of their keys that each model's
// row of the model table (models/registry.cc) carries, as a handler's row
// carries its HandlerSchema. The loader reads, defaults, checks and prints a
// model's section from that description, so config/ spells out no model's
// section and names no model.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

namespace gearbox {

using Duration = std::chrono::microseconds;

// How a pool of workers follows the load: `min` workers from the start, up
// to `max` when every worker is busy and work waits, at most `spawn_rate`
// new ones a second; one idle for `idle_timeout` retires (down to `min`).
struct PoolLimits {
  int min = 1;
  int max = 1;
  int spawn_rate = 32;
  Duration idle_timeout = std::chrono::seconds(10);
};

struct ThreadPoolConfig {
  int threads = 64;     // the minimum, and the start
  int max_threads = 0;  // 0: = threads (the loader fills it in)
  Duration idle_thread_timeout = std::chrono::seconds(10);
  int max_spawn_rate = 32;  // threads started per second, at most
  int queue = 1024;
  PoolLimits Limits() const {
    return {threads, std::max(threads, max_threads), max_spawn_rate,
            idle_thread_timeout};
  }
};

struct PreforkConfig {
  int workers = 4;      // the minimum, and the start
  int max_workers = 0;  // 0: = workers (the loader fills it in)
  Duration idle_worker_timeout = std::chrono::seconds(10);
  int max_spawn_rate = 32;   // children forked per second, at most
  int64_t max_requests = 0;  // 0 = never recycle
  PoolLimits Limits() const {
    return {workers, std::max(workers, max_workers), max_spawn_rate,
            idle_worker_timeout};
  }
};

struct AsyncConfig {
  int loops = 1;
  // A callback running longer than this logs event=loop_stalled; 0: off.
  Duration stall_threshold = std::chrono::milliseconds(100);
};

// Every model's typed section. Config and ModelConfig both hold them, so a
// ModelKey's accessor reaches its value in either.
struct ModelSections {
  ThreadPoolConfig threadpool;
  PreforkConfig prefork;
  AsyncConfig async;
};

// Where a key's value lives, by its type.
using IntAt = int* (*)(ModelSections&);
using Int64At = int64_t* (*)(ModelSections&);
using DurationAt = Duration* (*)(ModelSections&);

// One key of a model's section. Write it with SectionKey.
struct ModelKey {
  std::string_view key;
  std::variant<IntAt, Int64At, DurationAt> at;
  // Inclusive bounds; a duration's in microseconds.
  int64_t min = 0;
  int64_t max = 0;
  // An integer key that is a pool's ceiling names the key of its minimum:
  // left unset (0), it takes the minimum's value, and it may not be below it.
  std::string_view ceiling_of;
};

// The key named `key` stored at `section.*field` (section: a member of
// ModelSections), e.g. SectionKey<&ModelSections::async, &AsyncConfig::loops>.
template <auto kSection, auto kField>
constexpr ModelKey SectionKey(std::string_view key, int64_t min, int64_t max,
                              std::string_view ceiling_of = {}) {
  // One initializer: a variant may not change alternatives in a constant
  // expression under every compiler.
  return ModelKey{key, +[](ModelSections& s) { return &(s.*kSection.*kField); },
                  min, max, ceiling_of};
}

template <auto kSection, auto kField>
constexpr ModelKey SectionKey(std::string_view key, Duration min,
                              Duration max) {
  return SectionKey<kSection, kField>(key, min.count(), max.count());
}

inline constexpr Duration kDurationMax = std::chrono::hours(24 * 365);

// What the loader knows about one model: the value of [server] model that
// selects it, and the keys of its section (named after it).
struct ModelSchema {
  std::string_view name;
  std::span<const ModelKey> keys;
};

}  // namespace gearbox
