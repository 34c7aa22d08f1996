// The body of a prefork child process: accept, serve, repeat.
#pragma once

#include <cstddef>
#include <cstdint>

#include "models/model.h"

namespace gearbox {

struct PreforkChildArgs {
  const ModelContext* context = nullptr;
  int slot = 0;              // stats slot (the child's index)
  int64_t max_requests = 0;  // already jittered; 0 = never recycle
  int ready_fd = -1;         // write one byte once accepting, then close
  int workers = 0;           // sibling slots (the head guard's slot follows)
  // The head guard's channels (-1: no guard): slow heads are parked on
  // park_fd, connections with a complete head are taken from unpark_fd.
  int park_fd = -1;
  int unpark_fd = -1;
  size_t handoff_capacity = 0;  // most bytes a parked connection may carry
};

// Runs in the child after fork(); never returns (exits with a PreforkExit
// code).
[[noreturn]] void RunPreforkChild(const PreforkChildArgs& args);

}  // namespace gearbox
