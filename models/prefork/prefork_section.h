// [prefork]: the keys of the section, as the model table's row describes them
// to config/ (config/model_sections.h).
#pragma once

#include <limits>

#include "config/model_sections.h"

namespace gearbox {

template <auto kField>
constexpr ModelKey PreforkKey(std::string_view key, int64_t min, int64_t max,
                              std::string_view ceiling_of = {}) {
  return SectionKey<&ModelSections::prefork, kField>(key, min, max, ceiling_of);
}

inline constexpr ModelKey kPreforkKeys[] = {
    PreforkKey<&PreforkConfig::workers>("workers", 1, 1024),
    PreforkKey<&PreforkConfig::max_workers>("max_workers", 1, 1024, "workers"),
    SectionKey<&ModelSections::prefork, &PreforkConfig::idle_worker_timeout>(
        "idle_worker_timeout", Duration(1), kDurationMax),
    PreforkKey<&PreforkConfig::max_spawn_rate>("max_spawn_rate", 1, 1024),
    PreforkKey<&PreforkConfig::max_requests>(
        "max_requests", 0, std::numeric_limits<int64_t>::max()),
};

}  // namespace gearbox
