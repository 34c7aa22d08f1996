// A parsed request, independent of the wire protocol (HTTP/1.1 or FastCGI).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace gearbox {

struct Header {
  std::string_view name;
  std::string_view value;
};

// Views point into the connection's input buffer (or the codec's body buffer)
// and are valid until the request is consumed. Handlers copy what they keep
// across waits.
struct Request {
  std::string_view method;
  std::string_view target;  // as sent: path plus optional "?query"
  std::string_view path;
  std::string_view query;  // without the '?'
  uint8_t version_major = 1;
  uint8_t version_minor = 1;
  std::vector<Header>
      headers;  // reused across requests: no per-request allocation
  std::string_view body;
  bool keep_alive = true;
  bool is_head = false;

  // Case-insensitive header lookup; empty when absent. O(n), n = header count.
  std::string_view FindHeader(std::string_view name) const;
  // Value of `key` in the query string (no percent-decoding); empty when
  // absent.
  std::string_view QueryParam(std::string_view key) const;
  // Splits target into path and query.
  void SetTarget(std::string_view raw_target);
};

}  // namespace gearbox
