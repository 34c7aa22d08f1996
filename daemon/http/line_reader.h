// Finds CRLF-terminated lines in a buffer that grows between calls (RFC 9112
// 2.2: a bare CR or a bare LF is an error, never a line end). Its state is two
// offsets, so it survives the caller moving the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gearbox::http {

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
    size_t i = scan_;
    while (i < buf.size() && buf[i] != '\r' && buf[i] != '\n') ++i;
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
