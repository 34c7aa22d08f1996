// Finds CRLF-terminated lines in a buffer that grows between calls (RFC 9112
// 2.2: a bare CR or a bare LF is an error, never a line end). Its state is two
// offsets, so it survives the caller moving the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gearbox::http {

// The offset of the first CR or LF in buf[from, size), or size. Every byte of
// a head goes through here, so 16 are compared at once where the CPU can;
// loads stay inside the buffer (the last block is read overlapping).
inline size_t FindCrOrLf(std::string_view buf, size_t from) {
  size_t i = from;
#if defined(__SSE2__)
  const size_t n = buf.size();
  if (n >= 16) {
    const __m128i cr = _mm_set1_epi8('\r');
    const __m128i lf = _mm_set1_epi8('\n');
    auto hits = [&](size_t at) {
      const __m128i v =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf.data() + at));
      return static_cast<unsigned>(_mm_movemask_epi8(
          _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, lf))));
    };
    for (; i + 16 <= n; i += 16) {
      if (unsigned m = hits(i); m != 0) return i + __builtin_ctz(m);
    }
    if (i >= n) return i;
    // The last n - i bytes: the final block, less the bytes already seen.
    const unsigned m = hits(n - 16) >> (16 - (n - i));
    return m != 0 ? i + __builtin_ctz(m) : n;
  }
#endif
  while (i < buf.size() && buf[i] != '\r' && buf[i] != '\n') ++i;
  return i;
}

struct LineEvent {
  enum Kind {
    kNeedMore,   // no complete line yet
    kLine,       // a line: content [begin, end), its CRLF at end
    kBareCr,     // a CR at `end` followed by something other than LF
    kBareLf,     // an LF at `end` without a CR before it
    kOverLimit,  // a content byte at `end` is at or past the limit
  };
  Kind kind = kNeedMore;
  size_t begin = 0;
  size_t end = 0;
};

class LineReader {
 public:
  // Offsets are 32-bit: callers never pass buffers of 4 GiB.
  void Start(size_t at) { begin_ = scan_ = static_cast<uint32_t>(at); }
  size_t begin() const { return begin_; }

  // The next line of `buf` from where the last call stopped. Every byte is
  // looked at once, except a CR at the end of `buf`, seen again with the byte
  // after it. `limit`: offset of the first byte a line's content may not
  // reach (the CRLF never counts).
  LineEvent Next(std::string_view buf, size_t limit) {
    const size_t i = FindCrOrLf(buf, scan_);
    if (i > scan_ && i > limit) {
      return {LineEvent::kOverLimit, begin_, scan_ > limit ? scan_ : limit};
    }
    scan_ = static_cast<uint32_t>(i);
    if (i == buf.size()) return {LineEvent::kNeedMore, begin_, i};
    if (buf[i] == '\n') return {LineEvent::kBareLf, begin_, i};
    if (i + 1 == buf.size()) return {LineEvent::kNeedMore, begin_, i};
    if (buf[i + 1] != '\n') return {LineEvent::kBareCr, begin_, i};
    LineEvent line{LineEvent::kLine, begin_, i};
    begin_ = scan_ = static_cast<uint32_t>(i + 2);
    return line;
  }

 private:
  uint32_t begin_ = 0;  // first byte of the current line
  uint32_t scan_ = 0;   // next byte to look at
};

}  // namespace gearbox::http
