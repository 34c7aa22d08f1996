// Which prefork child holds each of a test's kept-alive connections, read from
// /proc (the kernel's socket table and each child's descriptors), so a test
// can pick a connection by its holder instead of hoping for a split.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <vector>

#include "tests/integration/harness.h"

namespace gearbox::hardening {

struct HeldSplit {
  // Per connection: the child whose descriptors hold its server end, or -1
  // (neither: the head guard has it, or it is closed).
  std::vector<pid_t> holder;
  pid_t most = -1;     // the child holding the most (the first on a tie)
  pid_t sibling = -1;  // the other child

  // How many of the connections `child` holds (-1: how many neither does).
  long Holds(pid_t child) const;
  // The index of the first connection `child` holds (holder.size(): none).
  size_t FirstOf(pid_t child) const;
};

// The split of `conns` between the two `children`.
HeldSplit SplitOf(const std::vector<gearbox::testing::Connection>& conns,
                  const std::vector<pid_t>& children);

}  // namespace gearbox::hardening
