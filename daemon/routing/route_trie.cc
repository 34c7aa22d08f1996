#include "daemon/routing/route_trie.h"

#include <string>

#include "daemon/routing/route_path.h"

namespace gearbox {
namespace {

// The path a literal-only pattern matches, if canonicalising leaves it as it
// is (FindExact's promise), else "".
std::string ExactPath(const RoutePattern& pattern) {
  std::string path;
  for (const PatternSegment& segment : pattern.segments) {
    if (segment.kind != PatternSegment::Kind::kLiteral) return "";
    path += '/';
    path += segment.text;
  }
  std::string scratch;
  const RoutePath canonical = CanonicalPath(path, scratch);
  return canonical.ok && canonical.path == path ? path : "";
}

}  // namespace

uint32_t RouteTrie::Child(uint32_t node, const PatternSegment& segment) {
  using Kind = PatternSegment::Kind;
  uint32_t* slot = nullptr;
  if (segment.kind == Kind::kLiteral) {
    const uint32_t found = nodes_[node].literals.Find(segment.text);
    if (found != kNone) return found;
    const uint32_t child = static_cast<uint32_t>(nodes_.size());
    nodes_[node].literals.Set(segment.text, child);
    nodes_.emplace_back();
    return child;
  }
  slot = segment.kind == Kind::kWild ? &nodes_[node].wild : &nodes_[node].slash;
  if (*slot != kNone) return *slot;
  const uint32_t child = static_cast<uint32_t>(nodes_.size());
  *slot = child;  // before emplace_back: it may move nodes_
  nodes_.emplace_back();
  return child;
}

void RouteTrie::Add(const RoutePattern& pattern, uint32_t route) {
  uint32_t node = 0;
  for (const PatternSegment& segment : pattern.segments) {
    if (segment.kind == PatternSegment::Kind::kMulti) {
      nodes_[node].multi_route = route;
      return;
    }
    node = Child(node, segment);
  }
  nodes_[node].end_route = route;
  const std::string exact = ExactPath(pattern);
  if (!exact.empty()) exact_.Set(exact, route);
}

// `pos` is at the '/' before the next segment, or at the end. Recursion
// depth is bounded by the longest pattern.
bool RouteTrie::FindFrom(uint32_t index, std::string_view path, size_t pos,
                         Match& out) const {
  const Node& node = nodes_[index];
  if (pos == path.size()) {
    out.route = node.end_route;
    return node.end_route != kNone;
  }
  const uint8_t depth = out.count;
  if (pos + 1 == path.size()) {  // the trailing slash
    if (node.slash != kNone && nodes_[node.slash].end_route != kNone) {
      out.route = nodes_[node.slash].end_route;
      return true;
    }
  } else {
    size_t end = path.find('/', pos + 1);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view segment = path.substr(pos + 1, end - pos - 1);
    const uint32_t literal = node.literals.Find(segment);
    if (literal != kNone && FindFrom(literal, path, end, out)) {
      return true;
    }
    if (node.wild != kNone && depth < kMaxCaptures) {
      out.values[depth] = {segment.data(), segment.size()};
      out.count = depth + 1;
      if (FindFrom(node.wild, path, end, out)) return true;
      out.count = depth;
    }
  }
  if (node.multi_route == kNone || depth >= kMaxCaptures) return false;
  out.values[depth] = {path.data() + pos + 1, path.size() - pos - 1};
  out.count = depth + 1;
  out.route = node.multi_route;
  return true;
}

}  // namespace gearbox
