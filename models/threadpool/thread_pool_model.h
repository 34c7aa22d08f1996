// `threadpool`: one process, a poller thread that accepts and parks idle
// keep-alive connections, a bounded hand-off queue, and N worker threads doing
// blocking I/O.
#pragma once

#include <memory>

#include "models/model.h"

namespace gearbox {

std::unique_ptr<Model> MakeThreadPoolModel();
// The most threads a generation of config runs (max_threads).
int ThreadPoolMaxWorkers(const ModelConfig& config);

}  // namespace gearbox
