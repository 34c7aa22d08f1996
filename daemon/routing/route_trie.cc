#include "daemon/routing/route_trie.h"

namespace gearbox {

uint32_t RouteTrie::Child(uint32_t node, const PatternSegment& segment) {
  using Kind = PatternSegment::Kind;
  uint32_t* slot = nullptr;
  if (segment.kind == Kind::kLiteral) {
    auto it = nodes_[node].literals.find(segment.text);
    if (it != nodes_[node].literals.end()) return it->second;
    const uint32_t child = static_cast<uint32_t>(nodes_.size());
    nodes_[node].literals.emplace(segment.text, child);
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
}

bool RouteTrie::Find(std::string_view path, Match& out) const {
  out.count = 0;
  return FindFrom(0, path, 0, out);
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
    auto it = node.literals.find(segment);
    if (it != node.literals.end() && FindFrom(it->second, path, end, out)) {
      return true;
    }
    if (node.wild != kNone && depth < kMaxCaptures) {
      out.values[depth] = segment;
      out.count = depth + 1;
      if (FindFrom(node.wild, path, end, out)) return true;
      out.count = depth;
    }
  }
  if (node.multi_route == kNone || depth >= kMaxCaptures) return false;
  out.values[depth] = path.substr(pos + 1);
  out.count = depth + 1;
  out.route = node.multi_route;
  return true;
}

}  // namespace gearbox
