// Optional per-request logging: the access log ([log] access = true) and the
// slow log ([log] slow = "500ms"). Off by default; when off, it costs one
// branch.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "config/config.h"

namespace gearbox {

struct RequestRecord {
  std::string_view method;
  std::string_view path;
  std::string_view request_id;  // X-Request-Id from nginx, or empty
  int status = 0;
  uint64_t bytes_out = 0;
  uint64_t duration_us = 0;  // handler start -> response serialized
  uint64_t queue_us = 0;     // connection ready -> handler start
  bool waited = false;       // the handler waited at least once
  int worker = 0;            // stats slot: thread, child or loop index
};

class RequestLog {
 public:
  explicit RequestLog(const LogConfig& config)
      : access_(config.access),
        slow_us_(config.slow ? static_cast<uint64_t>(config.slow->count())
                             : 0) {}
  bool enabled() const { return access_ || slow_us_ > 0; }
  void Record(const RequestRecord& r) const;

 private:
  const bool access_;
  const uint64_t slow_us_;  // 0 = no slow log
};

}  // namespace gearbox
