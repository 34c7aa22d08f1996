#include "daemon/routing/route_path.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

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

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint32_t Load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The `n` (4 to 8) bytes at `p` as one word, zeros after them: two 4-byte
// loads, the second's bytes that the first holds shifted out.
uint64_t LoadShort(const char* p, size_t n) {
  const uint64_t tail = Load32(p + n - 4);
  return Load32(p) | (tail >> (8 * (8 - n))) << 32;
}

// Nonzero when a byte of `word` equals `c`: 0x80 in each such byte, and in
// a 0x01 byte just above one ((c ^ 1) in the word), which the callers never
// mistake for a match (see CleanWord).
uint64_t BytesEqual(uint64_t word, char c) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  const uint64_t x = word ^ (kOnes * static_cast<uint8_t>(c));
  return (x - kOnes) & ~x & (kOnes << 7);
}

// Whether `word` holds no '%' and no two adjacent bytes of "./" (the first
// may be `before`, the byte preceding the word). '.' and '/' differ in the
// low bit only, so one comparison of the word with that bit set finds both,
// and no byte of it is then '.', so that mask has no stray bit. The '%' mask
// is only tested for zero. Zero bytes are neither.
bool CleanWord(uint64_t word, char before) {
  const uint64_t dot_or_slash = BytesEqual(word | 0x0101010101010101ull, '/');
  const uint64_t after = dot_or_slash << 8 | ((before | 1) == '/' ? 0x80 : 0);
  return (BytesEqual(word, '%') | (after & dot_or_slash)) == 0;
}

// A quick "canonical" for paths of 4 bytes or more with no '%' and none of
// "//", "/.", "..", "./": eight bytes at a time. False means IsCanonical
// decides ("/a..b" or "/.well-known" are canonical too). The words overlap
// (the last ends at the path's end) and each is given the byte before it, so
// every adjacent pair of bytes is looked at.
bool PlainlyCanonical(std::string_view raw) {
  const char* p = raw.data();
  const size_t n = raw.size();
  if (n < 4) return false;
  uint64_t word = n < 8 ? LoadShort(p, n) : Load64(p);
  char before = 0;
  size_t at = 0;
  while (CleanWord(word, before)) {
    if (at + 8 >= n) return true;
    at = std::min(at + 8, n - 8);
    before = p[at - 1];
    word = Load64(p + at);
  }
  return false;
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

// The canonical form of `raw` (which PlainlyCanonical turned away),
// written to `scratch` unless it is `raw` itself.
RoutePath Rewrite(std::string_view raw, std::string& scratch) {
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

}  // namespace

RoutePath CanonicalPath(std::string_view raw, std::string& scratch) {
  if (raw.empty() || raw[0] != '/') return {raw, false};
  if (PlainlyCanonical(raw)) return {raw, true};
  return Rewrite(raw, scratch);
}

}  // namespace gearbox
