// The chunked transfer coding of a request body (RFC 9112 7.1), decoded in
// place: the data pieces are reported as offsets into the caller's buffer.
// Pure, incremental (each byte is looked at once), and its state is plain
// data. gearbox does this itself because llhttp 8.1 refuses valid chunk
// extensions (BWS around ';' and '=', quoted-pairs) and only notices an
// oversize chunk once its data arrives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "daemon/http/http_syntax.h"
#include "daemon/http/line_reader.h"

namespace gearbox::http {

struct BodyPiece {
  size_t offset = 0;
  size_t length = 0;
};

class ChunkedDecoder {
 public:
  struct Limits {
    uint64_t max_body_bytes = 0;   // data, all chunks together: 413
    size_t max_ext_bytes = 0;      // chunk extensions, all lines together: 400
    size_t max_trailer_bytes = 0;  // the trailer section: 431
  };
  enum class Status { kIncomplete, kDone, kError };
  struct Result {
    Status status = Status::kIncomplete;
    size_t end = 0;  // kDone: offset just past the final CRLF
    Verdict error;   // kError
  };

  // A body starting at offset `at` of the caller's buffer.
  void Start(size_t at, const Limits& limits);
  // Decodes what arrived since the last call; data pieces are appended to
  // `pieces`. After kDone or kError, Start() again. Verdicts come at the byte
  // that decides them: an over-long chunk-size (more than 16 significant hex
  // digits) as it arrives, a chunk-size over the body budget (413) as soon as
  // it ends, before any of its data.
  Result Decode(std::string_view buf, std::vector<BodyPiece>& pieces);

  uint64_t body_bytes() const { return body_bytes_; }

 private:
  enum class State { kSize, kLineRest, kData, kDataCr, kDataLf, kTrailer };
  Result Fail(int status, const char* reason);
  bool DecodeSize(std::string_view buf, Result* r);
  bool EndLine(std::string_view buf, Result* r);
  void DecodeTrailer(std::string_view buf, Result* r);

  Limits limits_;
  State state_ = State::kSize;
  size_t pos_ = 0;         // next byte to look at
  size_t line_start_ = 0;  // first byte of the current chunk line
  uint64_t size_ = 0;      // chunk-size so far, then data left in the chunk
  int digits_ = 0;         // significant hex digits of the chunk-size
  bool any_digit_ = false;
  uint64_t body_bytes_ = 0;
  size_t ext_bytes_ = 0;
  size_t trailer_start_ = 0;
  LineReader lines_;
};

}  // namespace gearbox::http
