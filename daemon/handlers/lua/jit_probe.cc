#include "daemon/handlers/lua/jit_probe.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gearbox::lua {
namespace {

// The same two steps as LuaJIT's mcode area (lj_mcode.c): map RW, then
// flip to RX.
std::string Probe() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return std::string("mmap(PROT_READ|PROT_WRITE): ") + strerror(errno);
  }
  std::string reason;
  if (mprotect(p, page, PROT_READ | PROT_EXEC) != 0) {
    reason = std::string("mprotect(PROT_READ|PROT_EXEC): ") + strerror(errno);
  }
  munmap(p, page);
  return reason;
}

}  // namespace

const std::string& JitRefusedReason() {
  static const std::string reason = Probe();
  return reason;
}

}  // namespace gearbox::lua
