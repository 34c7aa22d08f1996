// A worker's instance of one module route, and its exchanges: gearboxd's
// Handler and Exchange over the module's C callbacks.
#pragma once

#include <gearbox/module.h>

#include <memory>

#include "daemon/handler.h"
#include "daemon/modules/module_library.h"

namespace gearbox {

// Runs the module's worker_init() (on the calling thread: the worker's);
// the handler's destructor runs worker_exit(). `route_handler` is what
// create() returned. `owner` keeps it and `library` alive as long as the
// handler; an exchange lives within its handler's lifetime.
std::unique_ptr<Handler> MakeModuleHandler(std::shared_ptr<const void> owner,
                                           const ModuleLibrary& library,
                                           void* route_handler,
                                           const gearbox_worker& worker);

}  // namespace gearbox
