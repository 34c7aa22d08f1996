// The compiled form of one method's routes (or of the routes for any
// method): a trie of path segments, built once per generation. Matching walks
// it segment by segment, trying a literal child, then the {name} child, then
// the node's multi wildcard ({name...} or a trailing '/'), and backs up on a
// dead end, as Go's ServeMux does. The loader refused conflicting patterns, so
// the first match found is the most specific one. The cost depends on the
// path's depth (one hash lookup per segment), not on the number of routes, and
// matching allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/route_pattern.h"

namespace gearbox {

class RouteTrie {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  // A pattern's anonymous multi (a trailing '/') counts as a capture slot.
  static constexpr size_t kMaxCaptures = kMaxPatternWildcards + 1;

  struct Match {
    uint32_t route = kNone;
    // The canonical values of the pattern's wildcards, in pattern order
    // (an anonymous trailing '/' included).
    std::array<std::string_view, kMaxCaptures> values{};
    uint8_t count = 0;
  };

  // Serves `pattern` with route `route`, replacing the route it had.
  void Add(const RoutePattern& pattern, uint32_t route);
  // The route for canonical `path` (route_path.h), kNone when none matches.
  bool Find(std::string_view path, Match& out) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>{}(s);
    }
  };
  struct Node {
    std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> literals;
    uint32_t wild = kNone;         // the {name} child
    uint32_t slash = kNone;        // the {$} child
    uint32_t end_route = kNone;    // a pattern ends here
    uint32_t multi_route = kNone;  // {name...} or '/' here: the rest
  };
  uint32_t Child(uint32_t node, const PatternSegment& segment);
  bool FindFrom(uint32_t node, std::string_view path, size_t pos,
                Match& out) const;

  std::vector<Node> nodes_{1};  // [0]: the root
};

}  // namespace gearbox
