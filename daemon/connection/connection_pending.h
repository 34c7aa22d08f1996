// The private part of a connection whose handler waits (connection.cc and
// connection_exchange.cc share it; nothing outside daemon/connection/ sees it).
#pragma once

#include <memory>
#include <string>

#include "daemon/connection/connection.h"

namespace gearbox {

// A request whose handler waits. Held only then, so idle connections stay
// small; the block comes from the worker's spares when it has them
// (pending_spares.h). The Request copy keeps only what the codec needs to
// frame the response (version, keep-alive, HEAD) and, when the request log is
// on, method and path.
struct Connection::Pending {
  std::unique_ptr<Exchange> exchange;
  Response response;
  Request request;
  std::string method_path;
  RequestTiming timing;
  bool announce_close = false;
  Step step;  // what it waits for now
  // Handler start + the route's timeout: the exchange is destroyed then and
  // the client gets 504, whatever it waits for.
  Clock::time_point request_deadline{};
};

}  // namespace gearbox
