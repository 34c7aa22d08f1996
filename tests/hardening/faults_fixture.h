// The fixture of the fault tests (faults_<topic>_test.cc): HardeningTest that
// can wait for the daemon's worker children.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <vector>

#include "tests/hardening/hardening.h"

namespace gearbox::hardening {

class FaultTest : public HardeningTest {
 protected:
  // Waits (bounded) until the daemon has `n` worker children; returns them.
  std::vector<pid_t> WaitForChildren(size_t n, Millis timeout) {
    std::vector<pid_t> kids;
    gearbox::testing::WaitUntil(
        [&] {
          kids = WorkerChildrenOf(pid());
          return kids.size() == n;
        },
        timeout);
    return kids;
  }
};

}  // namespace gearbox::hardening
