// A parsed request, independent of the wire protocol (HTTP/1.1 or FastCGI).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/ip_net.h"

namespace gearbox {

struct Header {
  std::string_view name;
  std::string_view value;
};

// One capture of the matched route's pattern: `{id}` in "/items/{id}" names
// it, the request's segment (percent-decoded once) is its value. The name
// views the route's compiled pattern (valid for the generation); the value
// views the request (valid as long as its other views).
struct PathParam {
  std::string_view name;
  std::string_view value;
};
// Most wildcards one pattern may have (the config loader refuses more):
// captures are an inline array, so routing never allocates.
inline constexpr size_t kMaxPathParams = 8;

// Where a request came from: set by its connection before the handler starts
// (the connection keeps only the peer and the listener's name).
struct RequestOrigin {
  std::string_view listener;       // the [[listen]] name ("http", or systemd's)
  std::string_view protocol;       // "http" or "fastcgi"
  IpAddress peer;                  // the connection's peer
  std::span<const IpNet> trusted;  // [server] trusted_proxies
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
  // The matched route's captures in pattern order, set by the router before
  // the handler starts; none for an exact or prefix route.
  std::array<PathParam, kMaxPathParams> params{};
  uint8_t param_count = 0;
  // The router's buffer for percent-decoded values (reused across requests:
  // a request whose path needs no decoding never touches it).
  std::string decoded;

  // Its connection's origin; all empty outside a connection (unit tests).
  RequestOrigin origin;
  // FastCGI's REMOTE_ADDR as the front end sent it (read over FastCGI only).
  std::string_view remote_addr;

  // The client's address as text ("203.0.113.7"): from a trusted peer
  // (origin->trusted) the rightmost X-Forwarded-For entry that is not itself
  // trusted, else X-Real-IP, or over FastCGI REMOTE_ADDR; from another peer
  // its own address. Empty when unknown (a unix-socket peer that says
  // nothing). Computed on the first call per request, without allocating;
  // valid as long as the request's other views.
  std::string_view Client() const;
  // The connection sets the origin for each request: forget the last
  // request's client.
  void SetOrigin(const RequestOrigin& o) {
    origin = o;
    client_known_ = false;
  }

  // Case-insensitive header lookup; empty when absent. O(n), n = header count.
  std::string_view FindHeader(std::string_view name) const;
  // Value of `key` in the query string (no percent-decoding); empty when
  // absent.
  std::string_view QueryParam(std::string_view key) const;
  // The captures, in pattern order.
  std::span<const PathParam> Params() const {
    return {params.data(), param_count};
  }
  // The capture named `name`, or null when the route has none of that name.
  // O(n), n <= kMaxPathParams.
  const PathParam* FindParam(std::string_view name) const;
  // The value of capture `name`; empty when absent (FindParam tells an empty
  // `{rest...}` from an absent name).
  std::string_view Param(std::string_view name) const {
    const PathParam* p = FindParam(name);
    return p ? p->value : std::string_view{};
  }
  // Splits target into path and query.
  void SetTarget(std::string_view raw_target);

 private:
  mutable std::string_view client_;
  mutable bool client_known_ = false;
  mutable std::array<char, kIpTextSize> client_text_{};
};

}  // namespace gearbox
