// The model-independent part of serving one parsed request: route it, start the
// exchange, and turn the finished response into bytes with the counters updated.
// Both the blocking driver and the async model use it, so every model answers the
// same way.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "daemon/codec.h"
#include "daemon/handler.h"
#include "daemon/metrics/worker_stats.h"
#include "daemon/router.h"

namespace gearbox {

// Starts the exchange for `request`; marks the worker busy and the request
// in flight until FinishRequest().
inline std::unique_ptr<Exchange> BeginRequest(const Router& router,
                                              const Request& request,
                                              WorkerStats& stats) {
  Bump(stats.inflight);
  stats.busy.store(1, std::memory_order_relaxed);
  return router.Find(request.path)->Start(request);
}

// Serializes the response and counts it. Returns true when the connection must
// close after the bytes in `out` are written.
inline bool FinishRequest(ServerCodec& codec, const Request& request,
                          const Response& response, bool close,
                          std::string& out, WorkerStats& stats) {
  size_t before = out.size();
  close = codec.AppendResponse(request, response, close, out);
  Bump(stats.requests);
  stats.CountStatus(response.status);
  Bump(stats.bytes_out, out.size() - before);
  stats.inflight.store(stats.inflight.load(std::memory_order_relaxed) - 1,
                       std::memory_order_relaxed);
  stats.busy.store(0, std::memory_order_relaxed);
  return close;
}

}  // namespace gearbox
