// The supervisor: owns the listening sockets and the generations of models,
// turns signals into stop/reload, and reports figures (stats line, sd_notify).
//   TERM: graceful stop (drain, bounded by graceful_timeout)
//   INT/QUIT: fast stop
//   HUP: reload: validate the new config (and load its modules afresh), keep
//        the old one if it is bad, otherwise start a new generation (possibly
//        another model) on the same sockets and drain the old one.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"

namespace gearbox {

class Modules;

// Runs until stopped; returns the process exit code. `modules` are config's,
// loaded (Modules::Load) for the first generation. `config_path` is empty when
// running on the embedded default (then a reload re-reads the embedded
// default).
int RunSupervisor(Config config, std::shared_ptr<const Modules> modules,
                  std::string config_path);

}  // namespace gearbox
