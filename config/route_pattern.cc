#include "config/route_pattern.h"

#include <algorithm>
#include <set>

namespace gearbox {
namespace {

using Kind = PatternSegment::Kind;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsWildcardName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && (i == 0 || c < '0' || c > '9')) return false;
  }
  return true;
}

std::string Quote(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

// One "{...}" segment; `last`: nothing follows it.
std::variant<PatternSegment, std::string> ParseWildcard(std::string_view seg,
                                                        bool last) {
  if (seg.front() != '{' || seg.back() != '}' || seg.size() < 2) {
    return "bad wildcard segment " + Quote(seg) +
           ": a wildcard is a whole segment, {name}, {name...} or {$}";
  }
  std::string_view name = seg.substr(1, seg.size() - 2);
  if (name == "$") {
    if (!last) return std::string("{$} must end the pattern");
    return PatternSegment{Kind::kSlash, ""};
  }
  const bool multi = name.ends_with("...");
  if (multi) name.remove_suffix(3);
  if (multi && !last) {
    return "{" + std::string(name) + "...} must end the pattern";
  }
  if (!IsWildcardName(name)) {
    return "bad wildcard name " + Quote(name) +
           " (a letter or '_', then letters, digits or '_')";
  }
  return PatternSegment{multi ? Kind::kMulti : Kind::kWild, std::string(name)};
}

Relation CompareSegments(const PatternSegment& a, const PatternSegment& b) {
  if (a.kind == Kind::kMulti && b.kind == Kind::kMulti) {
    return Relation::kEquivalent;
  }
  if (a.kind == Kind::kMulti) return Relation::kMoreGeneral;
  if (b.kind == Kind::kMulti) return Relation::kMoreSpecific;
  if (a.kind == Kind::kWild && b.kind == Kind::kWild) {
    return Relation::kEquivalent;
  }
  // A single wildcard never matches the trailing slash {$} stands for.
  if (a.kind == Kind::kWild) {
    return b.kind == Kind::kSlash ? Relation::kDisjoint
                                  : Relation::kMoreGeneral;
  }
  if (b.kind == Kind::kWild) {
    return a.kind == Kind::kSlash ? Relation::kDisjoint
                                  : Relation::kMoreSpecific;
  }
  return a == b ? Relation::kEquivalent : Relation::kDisjoint;
}

Relation Inverse(Relation r) {
  if (r == Relation::kMoreSpecific) return Relation::kMoreGeneral;
  if (r == Relation::kMoreGeneral) return Relation::kMoreSpecific;
  return r;
}

// The relation of two patterns from the relations of two of their aspects
// (Go's combineRelationships).
Relation Combine(Relation r1, Relation r2) {
  switch (r1) {
    case Relation::kEquivalent:
      return r2;
    case Relation::kDisjoint:
      return Relation::kDisjoint;
    case Relation::kOverlaps:
      return r2 == Relation::kDisjoint ? Relation::kDisjoint
                                       : Relation::kOverlaps;
    case Relation::kMoreSpecific:
    case Relation::kMoreGeneral:
      if (r2 == Relation::kEquivalent) return r1;
      if (r2 == Inverse(r1)) return Relation::kOverlaps;
      return r2;
  }
  return Relation::kOverlaps;
}

// The methods a set matches: itself, plus HEAD when it has GET.
std::set<std::string> Effective(std::span<const std::string> methods) {
  std::set<std::string> set(methods.begin(), methods.end());
  if (set.contains("GET")) set.insert("HEAD");
  return set;
}

void AppendSegment(const PatternSegment& s, std::string& out) {
  out += '/';
  if (s.kind == Kind::kLiteral) out += s.text;
  if (s.kind == Kind::kWild) out += 'x';
}

std::string Describe(std::span<const std::string> methods) {
  if (methods.empty()) return "any method";
  std::string text;
  for (const std::string& m : methods) text += (text.empty() ? "" : ",") + m;
  return text;
}

}  // namespace

int CanonicalSegment(std::string_view raw, char* out) {
  char* const start = out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '%') {
      *out++ = raw[i];
      continue;
    }
    const int hi = i + 2 < raw.size() ? HexValue(raw[i + 1]) : -1;
    const int lo = hi >= 0 ? HexValue(raw[i + 2]) : -1;
    if (lo < 0) return -1;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return -1;
    if (c == '/' || c == '%') {
      *out++ = '%';
      *out++ = '2';
      *out++ = c == '/' ? 'F' : '5';
    } else {
      *out++ = c;
    }
    i += 2;
  }
  return static_cast<int>(out - start);
}

size_t DecodeCanonical(std::string_view canonical, char* out) {
  char* const start = out;
  for (size_t i = 0; i < canonical.size(); ++i) {
    if (canonical[i] == '%' && i + 2 < canonical.size()) {
      *out++ = canonical[i + 2] == 'F' ? '/' : '%';
      i += 2;
    } else {
      *out++ = canonical[i];
    }
  }
  return static_cast<size_t>(out - start);
}

bool IsMethodToken(std::string_view method) {
  if (method.empty()) return false;
  for (char c : method) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') ||
        std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::variant<RoutePattern, std::string> ParsePattern(std::string_view path) {
  if (path.empty() || path[0] != '/') {
    return std::string("a pattern starts with '/'");
  }
  RoutePattern pattern;
  std::set<std::string, std::less<>> names;
  std::string_view rest = path;
  while (!rest.empty()) {
    rest.remove_prefix(1);  // the '/'
    if (rest.empty()) {     // a trailing slash: everything under the prefix
      pattern.segments.push_back({Kind::kMulti, ""});
      break;
    }
    const size_t end = std::min(rest.find('/'), rest.size());
    const std::string_view seg = rest.substr(0, end);
    rest.remove_prefix(end);
    if (seg.empty()) {
      return std::string(
          "empty segment (\"//\"): requests are matched with \"//\" merged "
          "into \"/\", so it could never match");
    }
    if (seg.find('{') != std::string_view::npos) {
      auto wild = ParseWildcard(seg, rest.empty());
      if (auto* why = std::get_if<std::string>(&wild)) return *why;
      PatternSegment& s = std::get<PatternSegment>(wild);
      if (s.kind != Kind::kSlash && !names.insert(s.text).second) {
        return "duplicate wildcard name " + Quote(s.text);
      }
      pattern.segments.push_back(std::move(s));
      continue;
    }
    std::string literal(seg.size(), '\0');
    const int n = CanonicalSegment(seg, literal.data());
    if (n < 0) {
      return "bad percent-escape in " + Quote(seg) +
             " (a '%' takes two hex digits; %00 is refused)";
    }
    literal.resize(static_cast<size_t>(n));
    if (literal == "." || literal == "..") {
      return "dot-segment " + Quote(seg) +
             ": requests are matched after removing dot-segments, so it "
             "could never match";
    }
    pattern.segments.push_back({Kind::kLiteral, std::move(literal)});
  }
  if (names.size() > kMaxPatternWildcards) {
    return "more than " + std::to_string(kMaxPatternWildcards) +
           " wildcards in one pattern";
  }
  return pattern;
}

Relation ComparePaths(const RoutePattern& a, const RoutePattern& b) {
  const auto& sa = a.segments;
  const auto& sb = b.segments;
  Relation rel = Relation::kEquivalent;
  size_t i = 0;
  for (; i < sa.size() && i < sb.size(); ++i) {
    rel = Combine(rel, CompareSegments(sa[i], sb[i]));
    if (rel == Relation::kDisjoint) return rel;
  }
  if (i == sa.size() && i == sb.size()) return rel;
  // Only a shorter pattern ending in a multi wildcard can match more.
  if (sa.size() < sb.size() && a.ends_in_multi()) {
    return Combine(rel, Relation::kMoreGeneral);
  }
  if (sb.size() < sa.size() && b.ends_in_multi()) {
    return Combine(rel, Relation::kMoreSpecific);
  }
  return Relation::kDisjoint;
}

Relation CompareMethods(std::span<const std::string> a,
                        std::span<const std::string> b) {
  if (a.empty() || b.empty()) {
    if (a.empty() && b.empty()) return Relation::kEquivalent;
    return a.empty() ? Relation::kMoreGeneral : Relation::kMoreSpecific;
  }
  const std::set<std::string> ea = Effective(a), eb = Effective(b);
  if (ea == eb) return Relation::kEquivalent;
  const bool a_in_b = std::includes(eb.begin(), eb.end(), ea.begin(), ea.end());
  const bool b_in_a = std::includes(ea.begin(), ea.end(), eb.begin(), eb.end());
  if (a_in_b) return Relation::kMoreSpecific;
  if (b_in_a) return Relation::kMoreGeneral;
  const bool shared = std::any_of(ea.begin(), ea.end(),
                                  [&](auto& m) { return eb.contains(m); });
  return shared ? Relation::kOverlaps : Relation::kDisjoint;
}

Relation CompareRoutes(const RoutePattern& a,
                       std::span<const std::string> a_methods,
                       const RoutePattern& b,
                       std::span<const std::string> b_methods) {
  const Relation methods = CompareMethods(a_methods, b_methods);
  if (methods == Relation::kDisjoint) return methods;
  return Combine(methods, ComparePaths(a, b));
}

std::optional<std::string> RouteConflict(
    const RoutePattern& a, std::span<const std::string> a_methods,
    const RoutePattern& b, std::span<const std::string> b_methods) {
  const Relation methods = CompareMethods(a_methods, b_methods);
  if (methods == Relation::kDisjoint) return std::nullopt;
  const Relation paths = ComparePaths(a, b);
  if (paths == Relation::kDisjoint) return std::nullopt;
  if (paths == Relation::kEquivalent) {
    if (methods == Relation::kEquivalent) {
      return "duplicate route (the same pattern for " + Describe(a_methods) +
             ")";
    }
    if (!a_methods.empty() && !b_methods.empty()) {
      return "the same pattern with overlapping methods (" +
             Describe(a_methods) + " and " + Describe(b_methods) +
             "); give one pattern disjoint method sets";
    }
    return std::nullopt;  // a restricted set is more specific than any
  }
  const Relation both = Combine(methods, paths);
  if (both != Relation::kEquivalent && both != Relation::kOverlaps) {
    return std::nullopt;
  }
  return "both match " + ExamplePath(a, b) + " and neither is more specific";
}

std::string ExamplePath(const RoutePattern& a, const RoutePattern& b) {
  std::string path;
  const auto& sa = a.segments;
  const auto& sb = b.segments;
  for (size_t i = 0; i < std::max(sa.size(), sb.size()); ++i) {
    const PatternSegment* x = i < sa.size() ? &sa[i] : nullptr;
    const PatternSegment* y = i < sb.size() ? &sb[i] : nullptr;
    // The narrower of the two says what comes next: past one pattern's end
    // its multi took the rest, a multi takes anything, a wildcard any
    // literal.
    const PatternSegment* pick = x;
    if (!x || x->kind == Kind::kMulti ||
        (x->kind == Kind::kWild && y && y->kind != Kind::kMulti)) {
      pick = y ? y : x;
    }
    AppendSegment(*pick, path);
  }
  return path.empty() ? "/" : path;
}

}  // namespace gearbox
