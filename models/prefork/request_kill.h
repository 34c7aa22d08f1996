// Cutting off a prefork child whose handler burns CPU past its request
// deadline (php-fpm's request_terminate_timeout, uWSGI's harakiri). A thread
// or a loop cannot be interrupted safely; a process can.
//
// The master sees the request's start and deadline in the child's stats slot
// (BeginRequest writes them). Past deadline + kStuckGrace it sigqueue()s
// SIGUSR2 with the request's start as the value. The child's handler checks
// that the same request is still in flight (it may have finished meanwhile),
// answers the client the state machine's 504, framed by its protocol's codec
// (daemon/connection/cut_off.h; rendered once per child, so a request costs
// nothing) when nothing else is waiting to be sent on its connection, counts
// it once, and exits with kChildRequestKilled. A child that is still there
// kKillEscalation later gets SIGKILL.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>

#include "config/config.h"
#include "daemon/metrics/worker_stats.h"
#include "models/blocking_connection.h"
#include "models/stuck_request.h"

namespace gearbox {

// SIGUSR2 to SIGKILL, for a child that does not exit (signal blocked, stuck
// in the kernel).
inline constexpr std::chrono::milliseconds kKillEscalation{1000};

// --- in the child ------------------------------------------------------------

// Renders the answers and installs the SIGUSR2 handler; the child counts
// into `stats`.
void InstallRequestKill(WorkerStats* stats, const LimitsConfig& limits);
// The connection the child serves now (null between connections), which the
// handler may answer.
void SetKillTarget(BlockingConnection* c, Protocol protocol);

// --- in the master -----------------------------------------------------------

// Asks child `pid` to give up the request that started at `start_us`.
// Returns false (errno set) when the signal cannot be sent.
bool SendRequestKill(pid_t pid, uint64_t start_us);

}  // namespace gearbox
