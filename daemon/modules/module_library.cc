#include "daemon/modules/module_library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/logging.h"

namespace gearbox {
namespace {

// Linux >= 6.3 logs a warning for a memfd created without saying whether it
// may be executed; older kernels reject the flag (EINVAL), so it is tried
// first and dropped then.
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

// ABI 1.0's gearbox_module ends with finish: a module's struct_size must
// cover at least that much.
constexpr size_t kModuleSize_1_0 =
    offsetof(gearbox_module, finish) + sizeof(gearbox_module::finish);

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

std::string Version(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// A sealed in-memory copy of `path`, or -1 with *error set.
int CopyToMemfd(const std::string& path, const std::string& name,
                std::string* error) {
  const int src = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (src < 0) {
    *error = "cannot open " + Quote(path) + ": " + strerror(errno);
    return -1;
  }
  struct stat st {};
  if (fstat(src, &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = Quote(path) + " is not a regular file";
    close(src);
    return -1;
  }
  const std::string label = "gearbox-module:" + name;
  const unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
  int fd = memfd_create(label.c_str(), flags | MFD_EXEC);
  if (fd < 0 && errno == EINVAL) fd = memfd_create(label.c_str(), flags);
  if (fd < 0) {
    *error = std::string("memfd_create: ") + strerror(errno);
    close(src);
    return -1;
  }
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(src, buffer, sizeof buffer);
    if (n == 0) break;
    if (n < 0 && errno == EINTR) continue;
    ssize_t written = n < 0 ? -1 : 0;
    while (written >= 0 && written < n) {
      const ssize_t w = write(fd, buffer + written, n - written);
      if (w < 0 && errno != EINTR) written = -1;
      if (w > 0) written += w;
    }
    if (written < 0) {
      *error = "copying " + Quote(path) + ": " + strerror(errno);
      close(src);
      close(fd);
      return -1;
    }
  }
  close(src);
  // The copy cannot change under the code that runs from it.
  fcntl(fd, F_ADD_SEALS,
        F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  return fd;
}

// dlopen()s the memfd through its /proc name. glibc matches names before
// inodes, so a name that a copy which never unloaded (a NODELETE object)
// still holds is skipped by moving the fd to another number.
void* OpenMemfd(int& fd, const std::string& path, std::string* error) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    if (void* stale =
            dlopen(proc.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      dlclose(stale);
      const int other = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
      if (other < 0) break;
      close(fd);
      fd = other;
      continue;
    }
    if (void* dl = dlopen(proc.c_str(), RTLD_NOW | RTLD_LOCAL)) return dl;
    // The message names the /proc path: name the file instead.
    const char* why = dlerror();
    std::string text = why ? why : "unknown error";
    if (text.compare(0, proc.size(), proc) == 0) text.erase(0, proc.size());
    if (text.compare(0, 2, ": ") == 0) text.erase(0, 2);
    *error = "dlopen(" + Quote(path) + "): " + text;
    return nullptr;
  }
  *error = "dlopen(" + Quote(path) + "): no free /proc/self/fd name";
  return nullptr;
}

}  // namespace

std::string CheckModuleAbi(const gearbox_module& m) {
  const std::string ours = Version(GEARBOX_ABI_MAJOR, GEARBOX_ABI_MINOR);
  const std::string its = Version(m.abi_major, m.abi_minor);
  if (m.abi_major != GEARBOX_ABI_MAJOR) {
    return "built for module ABI " + its + "; this gearboxd provides " + ours +
           " and loads major " + std::to_string(GEARBOX_ABI_MAJOR) +
           " only (rebuild the module against this gearbox's "
           "gearbox/module.h)";
  }
  if (m.abi_minor > GEARBOX_ABI_MINOR) {
    return "built for module ABI " + its + "; this gearboxd provides " + ours +
           ", an older minor (upgrade gearboxd, or rebuild the module against "
           "its "
           "gearbox/module.h)";
  }
  if (m.struct_size < kModuleSize_1_0) {
    return "built with struct_size " + std::to_string(m.struct_size) +
           ", smaller than ABI 1.0's gearbox_module (" +
           std::to_string(kModuleSize_1_0) + " bytes)";
  }
  return "";
}

std::shared_ptr<ModuleLibrary> ModuleLibrary::Load(const std::string& name,
                                                   const std::string& path,
                                                   std::string* error) {
  std::shared_ptr<ModuleLibrary> lib(new ModuleLibrary());
  lib->path_ = path;
  InitModuleHost(lib->host_, name);
  lib->memfd_ = CopyToMemfd(path, name, error);
  if (lib->memfd_ < 0) return nullptr;
  lib->dl_ = OpenMemfd(lib->memfd_, path, error);
  if (!lib->dl_) return nullptr;
  using Init = const gearbox_module* (*)(const gearbox_host*);
  auto init = reinterpret_cast<Init>(dlsym(lib->dl_, "gearbox_module_init"));
  if (!init) {
    *error = Quote(path) +
             " is not a gearbox module: it exports no gearbox_module_init() "
             "(see gearbox/module.h)";
    return nullptr;
  }
  const gearbox_module* module = init(&lib->host_.table);
  if (!module) {
    *error = Quote(path) + ": gearbox_module_init() returned NULL";
    return nullptr;
  }
  if (std::string why = CheckModuleAbi(*module); !why.empty()) {
    *error = Quote(path) + " is " + why;
    return nullptr;
  }
  // Fields a newer minor appended stay unread; fields the module's older
  // struct lacks stay null.
  std::memcpy(&lib->api_, module,
              std::min<size_t>(module->struct_size, sizeof lib->api_));
  const gearbox_module& api = lib->api_;
  if (!api.create || !api.start || !api.resume || !api.finish) {
    *error = Quote(path) +
             ": gearbox_module lacks a required callback (create, start, "
             "resume and finish are required)";
    return nullptr;
  }
  if (api.keys) {
    lib->keys_ = ModuleKeys::Read(name.c_str(), api.keys, error);
    if (!lib->keys_) {
      *error = Quote(path) + ": " + *error;
      return nullptr;
    }
  }
  LogInfo("module_loaded", "module={} path={} abi={} name={}", name,
          LogQuote(path), Version(module->abi_major, module->abi_minor),
          LogQuote(api.name ? api.name : ""));
  return lib;
}

ModuleLibrary::~ModuleLibrary() {
  if (dl_) {
    dlclose(dl_);
    LogInfo("module_unloaded", "module={} path={}", host_.name,
            LogQuote(path_));
  }
  if (memfd_ >= 0) close(memfd_);
}

}  // namespace gearbox
