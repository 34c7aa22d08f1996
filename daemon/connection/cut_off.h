// A request whose worker is cut off mid-handler: prefork's stuck-request kill
// ends the child from a signal handler, where nothing may allocate or lock.
// The 504 it owes the client is the state machine's timeout answer
// (TimeoutResponse, which TimeOutExchange sends too), rendered ahead by the
// codec of the connection's protocol, once per worker; at the kill the codec
// stamps it with what only that moment knows (FastCGI's request id, HTTP's
// Date), and the connection counts it (Connection::CountCutOff).
#pragma once

#include <string>

#include "config/config.h"
#include "daemon/response.h"

namespace gearbox {

// The answer to a request past its deadline: 504, "request timeout".
void TimeoutResponse(Response& response);

// TimeoutResponse as `protocol`'s codec frames it for a request not parsed
// yet, the connection closing after it (HTTP: Connection: close; FastCGI:
// STDOUT, the empty STDOUT, END_REQUEST). Stamp it before sending
// (Connection::StampCutOff).
std::string RenderCutOffAnswer(Protocol protocol, const LimitsConfig& limits);

}  // namespace gearbox
