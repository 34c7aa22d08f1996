// The supervisor: owns the listening sockets and the generations of models, turns
// signals into stop/reload, and reports figures (stats line, sd_notify).
//   TERM: graceful stop (drain, bounded by graceful_timeout)
//   INT/QUIT: fast stop
//   HUP: reload: validate the new config, keep the old one if it is bad, otherwise
//        start a new generation (possibly another model) on the same sockets and
//        drain the old one.
#pragma once

#include <string>

#include "config/config.h"

namespace gearbox {

// Runs until stopped; returns the process exit code. `config_path` is empty when
// running on the embedded default (then a reload re-reads the embedded default).
int RunSupervisor(Config config, std::string config_path);

}  // namespace gearbox
