#include "daemon/request_log.h"

#include "daemon/logging.h"

namespace gearbox {

void RequestLog::Record(const RequestRecord& r) const {
  if (access_) {
    LogInfo(
        "access",
        "request_id={} method={} path={} status={} bytes={} duration_ms={:.3f} "
        "queue_ms={:.3f} worker={}",
        r.request_id.empty() ? "-" : LogQuote(r.request_id), r.method,
        LogQuote(r.path), r.status, r.bytes_out, r.duration_us / 1000.0,
        r.queue_us / 1000.0, r.worker);
  }
  if (slow_us_ > 0 && r.duration_us + r.queue_us >= slow_us_) {
    // The phase that took longest: waiting for a worker, waiting on the
    // handler's backend, or running the handler.
    const char* phase = r.queue_us > r.duration_us ? "queue"
                        : r.waited                 ? "handler_wait"
                                                   : "handler";
    LogWarn("slow_request",
            "request_id={} method={} path={} status={} duration_ms={:.3f} "
            "queue_ms={:.3f} phase={} worker={}",
            r.request_id.empty() ? "-" : LogQuote(r.request_id), r.method,
            LogQuote(r.path), r.status, r.duration_us / 1000.0,
            r.queue_us / 1000.0, phase, r.worker);
  }
}

}  // namespace gearbox
