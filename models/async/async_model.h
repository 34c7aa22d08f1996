// `async`: one process, N libevent loops (one thread each), non-blocking I/O,
// and a per-connection timer for handler waits, like Tornado or nginx.
#pragma once

#include <memory>

#include "models/model.h"

namespace gearbox {

std::unique_ptr<Model> MakeAsyncModel();
// The loops a generation of config runs.
int AsyncMaxWorkers(const ModelConfig& config);

}  // namespace gearbox
