// [threadpool]: the keys of the section, as the model table's row describes
// them to config/ (config/model_sections.h).
#pragma once

#include "config/model_sections.h"

namespace gearbox {

template <auto kField>
constexpr ModelKey ThreadPoolKey(std::string_view key, int64_t min, int64_t max,
                                 std::string_view ceiling_of = {}) {
  return SectionKey<&ModelSections::threadpool, kField>(key, min, max,
                                                        ceiling_of);
}

inline constexpr ModelKey kThreadPoolKeys[] = {
    ThreadPoolKey<&ThreadPoolConfig::threads>("threads", 1, 4096),
    ThreadPoolKey<&ThreadPoolConfig::max_threads>("max_threads", 1, 4096,
                                                  "threads"),
    SectionKey<&ModelSections::threadpool,
               &ThreadPoolConfig::idle_thread_timeout>(
        "idle_thread_timeout", Duration(1), kDurationMax),
    ThreadPoolKey<&ThreadPoolConfig::max_spawn_rate>("max_spawn_rate", 1, 4096),
    ThreadPoolKey<&ThreadPoolConfig::queue>("queue", 1, 1000000),
};

}  // namespace gearbox
