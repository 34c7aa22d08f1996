// The body of a prefork child process: accept, serve, repeat.
#pragma once

#include <cstdint>

#include "models/model.h"

namespace gearbox {

struct PreforkChildArgs {
  const ModelContext* context = nullptr;
  int slot = 0;              // stats slot (the child's index)
  int64_t max_requests = 0;  // already jittered; 0 = never recycle
  int ready_fd = -1;         // write one byte once accepting, then close
};

// Runs in the child after fork(); never returns (exits with a PreforkExit
// code).
[[noreturn]] void RunPreforkChild(const PreforkChildArgs& args);

}  // namespace gearbox
