// [async]: the keys of the section, as the model table's row describes them
// to config/ (config/model_sections.h).
#pragma once

#include "config/model_sections.h"

namespace gearbox {

inline constexpr ModelKey kAsyncKeys[] = {
    SectionKey<&ModelSections::async, &AsyncConfig::loops>("loops", 1, 256),
    SectionKey<&ModelSections::async, &AsyncConfig::stall_threshold>(
        "stall_threshold", Duration(0), kDurationMax),
};

}  // namespace gearbox
