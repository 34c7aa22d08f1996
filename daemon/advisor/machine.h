// Facts about the machine the advice is weighed against.
#pragma once

namespace gearbox::advisor {

// Cores this process may run on: its CPU affinity mask, lowered to the cgroup
// v2 CPU quota (cpu.max) when one is set. At least 1.
int UsableCores();

// A new thread's virtual stack in MiB: RLIMIT_STACK, which glibc uses as the
// default pthread stack size (8 MiB unless raised or unlimited).
double ThreadStackMiB();

}  // namespace gearbox::advisor
