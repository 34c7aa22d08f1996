// What gearboxd hands a module (gearbox/module.h): the gearbox_host table,
// one per loaded copy, and the structs behind the ABI's opaque handles.
#pragma once

#include <gearbox/module.h>

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "daemon/response.h"

// The opaque handles are defined outside any namespace: the C header names
// them there.

// A [[route]]'s keys while the module's create() reads them.
struct gearbox_route {
  const gearbox::RouteConfig* route = nullptr;
  gearbox::Duration timeout{};  // the route's effective deadline
  // The module's declared keys (gearbox_module.keys), or null: then reading
  // a key declares it.
  const gearbox_key* keys = nullptr;
  std::vector<std::string> read;  // keys the module asked for (declared)
  // The first error create() caused, and where it points.
  std::optional<std::string> error;
  std::string error_key;  // empty: the [[route]] itself
  gearbox::SourcePosition error_at;
};

// The response of one exchange while a callback runs.
struct gearbox_response {
  gearbox::Response* response = nullptr;
  // The exchange's own Content-Type: Response::content_type only views it.
  std::string* content_type = nullptr;
  const char* module = "";  // for log lines about misuse
};

namespace gearbox {

// One per loaded module copy. The table is the first member of a
// standard-layout struct: the gearbox_host* a module passes back converts to
// this struct.
struct ModuleHost {
  gearbox_host table;
  char name[65];  // the [[module]] name (the loader allows 64 characters)
};

// A worker_init() in progress on this thread: what worker_error() marks.
struct WorkerInitState {
  const gearbox_worker* worker = nullptr;
  bool failed = false;
  std::string error;
};
// Sets the calling thread's worker_init() in progress (null: none).
void SetWorkerInit(WorkerInitState* state);

// Fills the table with gearboxd's functions.
void InitModuleHost(ModuleHost& host, const std::string& name);

// The worker the calling thread serves: module log lines carry it as
// worker= and gen=. Set when the worker builds its handlers (on its thread;
// a prefork child after fork). Never set in the master: its lines have
// neither field.
void SetModuleLogWorker(int worker, int generation);

}  // namespace gearbox
