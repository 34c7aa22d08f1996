// The path a request is routed by: gearbox's own rule, since nginx forwards
// the raw request-target (proxy_pass without a URI, FastCGI's REQUEST_URI)
// and normalizes only for its own location matching.
//  - "//" is one "/" (nginx's default merge_slashes), so "/static//a" is
//    "/static/a".
//  - RFC 3986 remove_dot_segments: "/a/./b/../c" is "/a/c"; ".." above the
//    root is refused (400).
//  - Percent-escapes are decoded into the canonical form patterns use
//    (config/route_pattern.h): all but %2F and %25, so "%2e%2e" is a
//    dot-segment and "%2F" never splits a segment. A malformed escape, an
//    encoded NUL, or a segment whose decoded "/"-pieces include "." or ".."
//    ("..%2Fetc") is refused (400): no capture ever holds a dot-segment.
// So a request can never escape a prefix route, nor a capture its segment.
#pragma once

#include <string>
#include <string_view>

namespace gearbox {

// The canonical path for `raw` (which starts with '/'), or nullopt-like
// `ok == false` for a path gearbox refuses. Most paths are already canonical
// and are returned as they are; the others are written to `scratch`, which
// keeps its capacity across requests. Then scratch.capacity() is at least
// scratch.size() + path.size() + 1: room to decode the captures in place.
struct RoutePath {
  std::string_view path;
  bool ok = true;
};
RoutePath CanonicalPath(std::string_view raw, std::string& scratch);

}  // namespace gearbox
