// Runs an Exchange to its end on the calling thread, waiting in
// clock_nanosleep / poll(): for a script's init, which runs when its worker
// starts (before the worker serves), where no model drives it yet.
#pragma once

#include "daemon/handler.h"

namespace gearbox::lua {

// False when `timeout` passed first (the exchange is left unfinished: the
// caller destroys it, which cancels it).
bool RunBlocking(Exchange& exchange, Response& response,
                 std::chrono::microseconds timeout);

}  // namespace gearbox::lua
