// `prefork`: a master and N child processes, each blocking in accept() and
// serving one connection at a time (spawn-fcgi + php-cgi, Apache prefork,
// gunicorn sync), plus a head guard process that holds slowly arriving
// request heads so that slow clients do not occupy children
// (models/prefork/head_guard.h).
#pragma once

#include <memory>

#include "models/model.h"

namespace gearbox {

std::unique_ptr<Model> MakePreforkModel();
// The most children a generation of config runs (max_workers).
int PreforkMaxWorkers(const ModelConfig& config);

// Exit codes of a prefork child, understood by the master.
enum PreforkExit : int {
  kChildDrained = 0,   // stopped on SIGTERM after finishing its request
  kChildRecycled = 3,  // served max_requests; replaced at once, no backoff
  kChildSetupFailed =
      4,  // could not start serving; counts toward the crash guard
  // The master cut off a request stuck past its deadline (request_kill.h);
  // replaced at once, not a crash.
  kChildRequestKilled = 5,
  // Idle past idle_worker_timeout above `workers`: the master asked it to go
  // (SIGUSR1); not replaced.
  kChildRetired = 6,
};

}  // namespace gearbox
