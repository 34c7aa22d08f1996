#include "daemon/http/chunked_decoder.h"

#include <algorithm>

namespace gearbox::http {
namespace {

// A chunk line (size and extensions) longer than this is refused: nothing
// legitimate comes near it, and it bounds what one line makes us buffer.
constexpr size_t kMaxChunkLine = 4096;

}  // namespace

void ChunkedDecoder::Start(size_t at, const Limits& limits) {
  limits_ = limits;
  state_ = State::kSize;
  pos_ = line_start_ = at;
  size_ = 0;
  digits_ = 0;
  any_digit_ = false;
  body_bytes_ = 0;
  ext_bytes_ = 0;
  trailer_start_ = 0;
}

ChunkedDecoder::Result ChunkedDecoder::Fail(int status, const char* reason) {
  Result r;
  r.status = Status::kError;
  r.error = Verdict{status, reason};
  return r;
}

ChunkedDecoder::Result ChunkedDecoder::Decode(std::string_view buf,
                                              std::vector<BodyPiece>& pieces) {
  Result r;
  for (;;) {
    switch (state_) {
      case State::kSize:
        if (!DecodeSize(buf, &r)) return r;
        break;
      case State::kLineRest:
        if (!EndLine(buf, &r)) return r;
        break;
      case State::kData: {
        const size_t n =
            static_cast<size_t>(std::min<uint64_t>(size_, buf.size() - pos_));
        if (n > 0) {
          pieces.push_back({pos_, n});
          pos_ += n;
          size_ -= n;
          body_bytes_ += n;
        }
        if (size_ > 0) return r;  // more data to come
        state_ = State::kDataCr;
        break;
      }
      case State::kDataCr:
      case State::kDataLf: {
        if (pos_ == buf.size()) return r;
        const char want = state_ == State::kDataCr ? '\r' : '\n';
        if (buf[pos_] != want) return Fail(400, "bad_chunk");
        ++pos_;
        if (state_ == State::kDataCr) {
          state_ = State::kDataLf;
        } else {
          state_ = State::kSize;
          line_start_ = pos_;
          size_ = 0;
          digits_ = 0;
          any_digit_ = false;
        }
        break;
      }
      case State::kTrailer:
        DecodeTrailer(buf, &r);
        return r;
    }
  }
}

// chunk-size = 1*HEXDIG. Returns false when Decode() must return `*r`.
bool ChunkedDecoder::DecodeSize(std::string_view buf, Result* r) {
  while (pos_ < buf.size()) {
    const int v = HexDigitValue(buf[pos_]);
    if (v < 0) break;
    if (digits_ > 0 || v != 0) ++digits_;
    // Refused at the digit that overflows: no need to wait for the line end.
    if (digits_ > 16) {
      *r = Fail(400, "bad_chunk_size");
      return false;
    }
    if (pos_ - line_start_ >= kMaxChunkLine) {
      *r = Fail(400, "bad_chunk");
      return false;
    }
    size_ = size_ * 16 + static_cast<uint64_t>(v);
    any_digit_ = true;
    ++pos_;
  }
  if (pos_ == buf.size()) return false;  // the size may go on
  if (!any_digit_) {
    *r = Fail(400, "bad_chunk_size");
    return false;
  }
  // The size is known: refuse a chunk that cannot fit before its data comes.
  if (size_ > limits_.max_body_bytes - body_bytes_) {
    *r = Fail(413, "body_too_large");
    return false;
  }
  const char c = buf[pos_];
  if (c != '\r' && c != ';' && c != ' ' && c != '\t') {
    *r = Fail(400, "bad_chunk_size");
    return false;
  }
  lines_.Start(pos_);
  state_ = State::kLineRest;
  return true;
}

// The rest of a chunk line: extensions, then CRLF.
bool ChunkedDecoder::EndLine(std::string_view buf, Result* r) {
  LineEvent e = lines_.Next(buf, line_start_ + kMaxChunkLine);
  switch (e.kind) {
    case LineEvent::kNeedMore:
      return false;
    case LineEvent::kBareCr:
    case LineEvent::kBareLf:
    case LineEvent::kOverLimit:
      *r = Fail(400, "bad_chunk");
      return false;
    case LineEvent::kLine:
      break;
  }
  std::string_view rest = buf.substr(e.begin, e.end - e.begin);
  ext_bytes_ += rest.size();
  if (ext_bytes_ > limits_.max_ext_bytes || !IsValidChunkExt(rest)) {
    *r = Fail(400, "bad_chunk_ext");
    return false;
  }
  pos_ = e.end + 2;
  if (size_ == 0) {  // last-chunk: the trailer section follows
    state_ = State::kTrailer;
    trailer_start_ = pos_;
    lines_.Start(pos_);
  } else {
    state_ = State::kData;
  }
  return true;
}

// trailer-section = *( field-line CRLF ), then CRLF. The fields are checked
// like header fields and then dropped: never merged into the header section
// (RFC 9110 6.5.1).
void ChunkedDecoder::DecodeTrailer(std::string_view buf, Result* r) {
  for (;;) {
    LineEvent e = lines_.Next(buf, trailer_start_ + limits_.max_trailer_bytes);
    switch (e.kind) {
      case LineEvent::kNeedMore:
        return;
      case LineEvent::kBareCr:
      case LineEvent::kBareLf:
        *r = Fail(400, "malformed");
        return;
      case LineEvent::kOverLimit: {
        Verdict v = OverlongFieldLine(buf.substr(e.begin, e.end - e.begin));
        *r = Fail(v.status, v.reason);
        return;
      }
      case LineEvent::kLine:
        break;
    }
    if (e.end == e.begin) {
      r->status = Status::kDone;
      r->end = e.end + 2;
      return;
    }
    Verdict v = CheckFieldLine(buf.substr(e.begin, e.end - e.begin));
    if (!v.ok()) {
      *r = Fail(v.status, v.reason);
      return;
    }
  }
}

}  // namespace gearbox::http
