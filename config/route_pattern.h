// Route patterns with Go 1.22 net/http.ServeMux semantics: "/hello" exact,
// "/items/{id}" one whole segment, "/files/{rest...}" the remainder,
// "/static/" everything under it, "/static/{$}" only "/static/" itself; and
// Go's rule for which of two patterns is more specific (the one matching a
// strict subset of the other's requests). Pure: the loader checks patterns and
// conflicts with it, the router compiles what it parsed.
//
// Paths are compared in one canonical form (CanonicalSegment): every
// percent-escape decoded except those of '/' and '%', so "/a%20b" and
// "/a b" are the same literal and "%2F" never splits a segment.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gearbox {

// Most wildcards one pattern may have: captures travel in a fixed inline
// array (Request::params), so routing never allocates.
inline constexpr size_t kMaxPatternWildcards = 8;

struct PatternSegment {
  enum class Kind : uint8_t {
    kLiteral,  // text: the segment in canonical form
    kWild,     // {name}: one whole, non-empty segment
    kMulti,    // {name...} or a trailing '/' (name ""): the rest, maybe empty
    kSlash,    // {$}: the trailing slash only
  };
  Kind kind = Kind::kLiteral;
  std::string text;  // literal text or wildcard name

  bool operator==(const PatternSegment&) const = default;
};

struct RoutePattern {
  std::vector<PatternSegment> segments;  // "/" alone: one anonymous kMulti
  bool operator==(const RoutePattern&) const = default;
  bool ends_in_multi() const {
    return !segments.empty() &&
           segments.back().kind == PatternSegment::Kind::kMulti;
  }
};

// A route's pattern, or why `path` is not one (for "[[route]] path: ...").
std::variant<RoutePattern, std::string> ParsePattern(std::string_view path);

// How the requests two patterns (or method sets) match relate: Go's
// relationship. kMoreSpecific: the first matches a strict subset.
enum class Relation : uint8_t {
  kEquivalent,
  kDisjoint,
  kMoreSpecific,
  kMoreGeneral,
  kOverlaps,
};

Relation ComparePaths(const RoutePattern& a, const RoutePattern& b);
// Method sets; an empty set is any method. GET implies HEAD. A restricted set
// is more specific than "any", a strict subset more specific than its
// superset, sets sharing some methods but neither containing the other
// overlap.
Relation CompareMethods(std::span<const std::string> a,
                        std::span<const std::string> b);

// How the requests of two routes (pattern + methods) relate.
Relation CompareRoutes(const RoutePattern& a,
                       std::span<const std::string> a_methods,
                       const RoutePattern& b,
                       std::span<const std::string> b_methods);

// Why two routes (pattern + methods) cannot both be configured, or nullopt
// when one is more specific or they are disjoint. Go's rule, plus the
// issue's for sets: two method sets on one pattern must be disjoint (or one
// of them "any").
std::optional<std::string> RouteConflict(
    const RoutePattern& a, std::span<const std::string> a_methods,
    const RoutePattern& b, std::span<const std::string> b_methods);

// A request path both patterns match (for messages); their paths overlap.
std::string ExamplePath(const RoutePattern& a, const RoutePattern& b);

// The canonical form of one raw path segment appended to `out` (which must
// have room for raw.size() more bytes: canonical is never longer). Returns
// the bytes written, or -1 for a malformed escape or an encoded NUL.
int CanonicalSegment(std::string_view raw, char* out);
// Decodes the %2F and %25 left in a canonical string (a capture's value);
// `out` needs room for canonical.size() bytes. Returns the bytes written.
size_t DecodeCanonical(std::string_view canonical, char* out);

// A method name as RFC 9110 allows it (a token).
bool IsMethodToken(std::string_view method);

}  // namespace gearbox
