#include "daemon/routing/route_path.h"

#include "config/route_pattern.h"

namespace gearbox {
namespace {

bool IsDot(std::string_view s) { return s == "." || s == ".."; }

// Whether `raw` is already canonical: no escape, no empty segment, no
// dot-segment. One pass; true for nearly every real request.
bool IsCanonical(std::string_view raw) {
  for (size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c == '%') return false;
    if (c != '/' || i + 1 == raw.size()) continue;
    const char next = raw[i + 1];
    if (next == '/') return false;
    if (next == '.') {
      const size_t end = raw.find('/', i + 1);
      if (IsDot(raw.substr(i + 1, end == raw.npos ? raw.npos : end - i - 1))) {
        return false;
      }
    }
  }
  return true;
}

// "..%2Fetc" decodes to "../etc": a capture must never hold a dot-segment.
bool HidesDotSegment(std::string_view canonical) {
  if (canonical.find("%2F") == std::string_view::npos) return false;
  size_t start = 0;
  while (true) {
    const size_t end = canonical.find("%2F", start);
    if (IsDot(canonical.substr(start, end - start))) return true;
    if (end == std::string_view::npos) return false;
    start = end + 3;
  }
}

}  // namespace

RoutePath CanonicalPath(std::string_view raw, std::string& scratch) {
  if (raw.empty() || raw[0] != '/') return {raw, false};
  if (IsCanonical(raw)) return {raw, true};
  // Canonical is never longer than raw, plus a "/" for an empty result; the
  // rest of the reserve is room for the captures decoded from it.
  scratch.reserve(2 * raw.size() + 2);
  scratch.resize(raw.size() + 1);
  char* const out = scratch.data();
  size_t len = 0;
  bool trailing = raw.back() == '/';
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t end = raw.find('/', pos + 1);
    if (end == std::string_view::npos) end = raw.size();
    const std::string_view seg = raw.substr(pos + 1, end - pos - 1);
    pos = end;
    if (seg.empty()) continue;  // "//" is "/"
    const int n = CanonicalSegment(seg, out + len + 1);
    if (n < 0) return {raw, false};
    const std::string_view canonical(out + len + 1, static_cast<size_t>(n));
    if (canonical == "." || canonical == "..") {
      if (canonical == "..") {
        if (len == 0) return {raw, false};  // above the root
        while (out[--len] != '/') {
        }
      }
      // "/a/." and "/a/b/.." end in a slash (RFC 3986 5.2.4).
      if (pos == raw.size()) trailing = true;
      continue;
    }
    if (HidesDotSegment(canonical)) return {raw, false};
    out[len] = '/';
    len += 1 + static_cast<size_t>(n);
  }
  if (trailing || len == 0) out[len++] = '/';
  return {std::string_view(out, len), true};
}

}  // namespace gearbox
