// Whether this process may turn written memory into code: LuaJIT's JIT maps
// its machine code read-write, then mprotect()s it read-execute. Where that
// is refused (systemd's MemoryDenyWriteExecute=, prctl(PR_SET_MDWE),
// SELinux's execmem) LuaJIT calls its panic handler and exit()s at its
// first trace, so the JIT must be off before any script runs.
#pragma once

#include <string>

namespace gearbox::lua {

// "" when a page can go from PROT_READ|PROT_WRITE to PROT_READ|PROT_EXEC;
// otherwise the refused call and its error. Probed once per process (the
// answer holds for its life: the policies above cannot be lifted).
const std::string& JitRefusedReason();

}  // namespace gearbox::lua
