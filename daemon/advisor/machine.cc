#include "daemon/advisor/machine.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

namespace gearbox::advisor {
namespace {

// "max 100000" (no quota) or "200000 100000" (2 cores' worth); 0 if unset.
double CgroupQuotaCores() {
  std::ifstream f("/sys/fs/cgroup/cpu.max");
  std::string quota;
  double period = 0;
  if (!(f >> quota >> period) || quota == "max" || period <= 0) return 0;
  try {
    return std::stod(quota) / period;
  } catch (...) {
    return 0;
  }
}

}  // namespace

int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores =
      sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  const double quota = CgroupQuotaCores();
  if (quota > 0) cores = std::min(cores, static_cast<int>(std::ceil(quota)));
  return std::max(1, cores);
}

double ThreadStackMiB() {
  rlimit rl;
  // glibc falls back to 2 MiB per thread when the limit is unlimited.
  if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
    return 2;
  return static_cast<double>(rl.rlim_cur) / (1024.0 * 1024.0);
}

}  // namespace gearbox::advisor
