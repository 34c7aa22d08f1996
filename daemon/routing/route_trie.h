// The compiled form of one method's routes (or of the routes for any
// method): a trie of path segments, built once per generation. Matching walks
// it segment by segment, trying a literal child, then the {name} child, then
// the node's multi wildcard ({name...} or a trailing '/'), and backs up on a
// dead end, as Go's ServeMux does. The loader refused conflicting patterns, so
// the first match found is the most specific one. The cost depends on the
// path's depth (one table lookup per segment), not on the number of routes,
// and matching allocates nothing.
//
// Patterns of literals only ("/hello", "/a/b") are also kept by their whole
// path: such a pattern matches one path only, so no other pattern of the trie
// is more specific for it, and the walk would find it too (literal children
// come first at every level). One lookup of the whole path then replaces the
// walk for the commonest routes.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "config/route_pattern.h"
#include "daemon/routing/literal_table.h"

namespace gearbox {

class RouteTrie {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;
  // A pattern's anonymous multi (a trailing '/') counts as a capture slot.
  static constexpr size_t kMaxCaptures = kMaxPatternWildcards + 1;

  struct Match {
    // A capture's value: trivial, so that a Match (made per request) leaves
    // its slots uninitialized; only the first `count` are ever read.
    struct Value {
      const char* data;
      size_t size;
      std::string_view view() const { return {data, size}; }
    };
    uint32_t route = kNone;
    // The canonical values of the pattern's wildcards, in pattern order
    // (an anonymous trailing '/' included).
    std::array<Value, kMaxCaptures> values;
    uint8_t count = 0;
  };

  // Serves `pattern` with route `route`, replacing the route it had.
  void Add(const RoutePattern& pattern, uint32_t route);
  // The route for canonical `path` (route_path.h), kNone when none matches.
  bool Find(std::string_view path, Match& out) const {
    out.count = 0;
    out.route = exact_.Find(path);
    return out.route != kNone || Walk(path, out);
  }
  // Find without the lookup of the whole path, for a caller whose
  // FindExact(path) missed already.
  bool Walk(std::string_view path, Match& out) const {
    out.count = 0;
    return FindFrom(0, path, 0, out);
  }
  // The route of the literal-only pattern whose path is `raw`, if that path
  // is its own canonical form, else kNone. For a request's raw path: a hit
  // is what Find would return for the canonical path, which is `raw` itself,
  // so the caller may skip canonicalising (a pattern such as "/a/..%2Fb",
  // whose path canonicalising refuses, is never found here).
  uint32_t FindExact(std::string_view raw) const { return exact_.Find(raw); }

 private:
  struct Node {
    LiteralTable literals;         // canonical segment -> child
    uint32_t wild = kNone;         // the {name} child
    uint32_t slash = kNone;        // the {$} child
    uint32_t end_route = kNone;    // a pattern ends here
    uint32_t multi_route = kNone;  // {name...} or '/' here: the rest
  };
  uint32_t Child(uint32_t node, const PatternSegment& segment);
  bool FindFrom(uint32_t node, std::string_view path, size_t pos,
                Match& out) const;

  std::vector<Node> nodes_{1};  // [0]: the root
  LiteralTable exact_;          // literal-only patterns' canonical paths
};

}  // namespace gearbox
