// One loaded copy of a module's shared object, checked against the ABI.
//
// Why a copy: dlopen() returns the handle it already has for a path (and for
// a file with the same device and inode), so a reload that dlopen()ed the
// rebuilt file at the same path would get the old code back. And a module
// file overwritten in place (`cp new.so installed.so`) while mapped crashes
// the process that maps it (SIGBUS). So each load copies the file into a
// fresh sealed memfd (its own inode, nothing on disk to clean up) and
// dlopen()s that through /proc/self/fd/N. A reload gets the file as it is
// now; the old generation keeps its own copy, unloaded only when the
// generation that uses it is gone. Prefork children inherit the master's
// mapping: the pages are shared.
#pragma once

#include <gearbox/module.h>

#include <memory>
#include <string>

#include "daemon/modules/module_host.h"
#include "daemon/modules/module_keys.h"

namespace gearbox {

class ModuleLibrary {
 public:
  // Loads a private copy of `path` for the [[module]] called `name` and
  // checks its gearbox_module. Null with *error set ("dlopen(...): ...",
  // "built for module ABI 2.0; ...") on failure.
  static std::shared_ptr<ModuleLibrary> Load(const std::string& name,
                                             const std::string& path,
                                             std::string* error);
  ~ModuleLibrary();  // dlclose(): only once nothing of the module is left
  ModuleLibrary(const ModuleLibrary&) = delete;
  ModuleLibrary& operator=(const ModuleLibrary&) = delete;

  // The module's callbacks; fields past its struct_size are null.
  const gearbox_module& api() const { return api_; }
  const char* name() const { return host_.name; }
  // The route keys the module declares (ABI 1.1), or null.
  const ModuleKeys* keys() const { return keys_.get(); }
  const std::string& path() const { return path_; }

 private:
  ModuleLibrary() = default;

  void* dl_ = nullptr;
  int memfd_ = -1;  // open while loaded: no other copy gets its /proc name
  std::string path_;
  ModuleHost host_;
  gearbox_module api_{};
  std::unique_ptr<const ModuleKeys> keys_;
};

// What ABI check fails for `module`, or empty ("built for module ABI 2.0;
// this gearboxd provides 1.0 ...").
std::string CheckModuleAbi(const gearbox_module& module);

}  // namespace gearbox
