// FastCGI 1.0 wire format
// (https://fastcgi-archives.github.io/FastCGI_Specification.html): record
// header, record types, roles, flags, statuses and name-value pair lengths.
// Only what a responder needs; shared by the parser, the writer and the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gearbox::fcgi {

inline constexpr uint8_t kVersion1 = 1;
inline constexpr size_t kHeaderSize = 8;
inline constexpr size_t kMaxContent = 65535;   // contentLength is 16 bits
inline constexpr uint16_t kNullRequestId = 0;  // management records

enum RecordType : uint8_t {
  kBeginRequest = 1,
  kAbortRequest = 2,
  kEndRequest = 3,
  kParams = 4,
  kStdin = 5,
  kStdout = 6,
  kStderr = 7,
  kData = 8,
  kGetValues = 9,
  kGetValuesResult = 10,
  kUnknownType = 11,
};

enum Role : uint16_t { kResponder = 1, kAuthorizer = 2, kFilter = 3 };

inline constexpr uint8_t kKeepConn = 1;  // FCGI_BEGIN_REQUEST flags

enum ProtocolStatus : uint8_t {
  kRequestComplete = 0,
  kCantMpxConn = 1,
  kOverloaded = 2,
  kUnknownRole = 3,
};

inline constexpr size_t kBeginRequestBodySize = 8;

// FCGI_GET_VALUES variable names.
inline constexpr std::string_view kMaxConns = "FCGI_MAX_CONNS";
inline constexpr std::string_view kMaxReqs = "FCGI_MAX_REQS";
inline constexpr std::string_view kMpxsConns = "FCGI_MPXS_CONNS";

struct RecordHeader {
  uint8_t version = 0;
  uint8_t type = 0;
  uint16_t request_id = 0;
  uint16_t content_length = 0;
  uint8_t padding_length = 0;
};

// `p` points at kHeaderSize readable bytes.
inline RecordHeader DecodeHeader(const char* p) {
  auto b = [p](int i) { return static_cast<uint8_t>(p[i]); };
  RecordHeader h;
  h.version = b(0);
  h.type = b(1);
  h.request_id = static_cast<uint16_t>(b(2) << 8 | b(3));
  h.content_length = static_cast<uint16_t>(b(4) << 8 | b(5));
  h.padding_length = b(6);
  return h;  // b(7) is reserved
}

inline void AppendHeader(std::string& out, uint8_t type, uint16_t request_id,
                         uint16_t content_length, uint8_t padding_length) {
  const char h[kHeaderSize] = {
      static_cast<char>(kVersion1),
      static_cast<char>(type),
      static_cast<char>(request_id >> 8),
      static_cast<char>(request_id & 0xff),
      static_cast<char>(content_length >> 8),
      static_cast<char>(content_length & 0xff),
      static_cast<char>(padding_length),
      0,
  };
  out.append(h, kHeaderSize);
}

// Padding that brings `content_length` to a multiple of 8 (the spec's
// recommendation, and what nginx and libfcgi send).
inline uint8_t PaddingFor(size_t content_length) {
  return static_cast<uint8_t>((8 - content_length % 8) % 8);
}

// A name-value pair's lengths: one byte when < 128, else four bytes with the
// high bit set (so at most 2^31 - 1).
inline void AppendPairLength(std::string& out, size_t length) {
  if (length < 128) {
    out.push_back(static_cast<char>(length));
    return;
  }
  out.push_back(static_cast<char>(((length >> 24) & 0x7f) | 0x80));
  out.push_back(static_cast<char>((length >> 16) & 0xff));
  out.push_back(static_cast<char>((length >> 8) & 0xff));
  out.push_back(static_cast<char>(length & 0xff));
}

inline void AppendPair(std::string& out, std::string_view name,
                       std::string_view value) {
  AppendPairLength(out, name.size());
  AppendPairLength(out, value.size());
  out.append(name);
  out.append(value);
}

// One decoded pair: offsets into the stream it was read from.
struct PairSpan {
  size_t name_offset = 0;
  size_t name_length = 0;
  size_t value_offset = 0;
  size_t value_length = 0;
  size_t end = 0;  // offset just past the pair
};

// Decodes the pair starting at `pos` of `stream`. Returns false when the stream
// does not (yet) hold the whole pair; `pair.end` is then the extent the lengths
// declare (0 while the lengths themselves are incomplete). Lengths are 64-bit
// sums of 31-bit values: no overflow, and a length beyond the stream is "not
// yet".
inline bool DecodePair(std::string_view stream, size_t pos, PairSpan& pair) {
  pair = PairSpan{};
  auto length = [&](size_t& at, size_t& len) {
    if (at >= stream.size()) return false;
    const auto b0 = static_cast<uint8_t>(stream[at]);
    if ((b0 & 0x80) == 0) {
      len = b0;
      at += 1;
      return true;
    }
    if (stream.size() - at < 4) return false;
    len = (static_cast<size_t>(b0 & 0x7f) << 24) |
          (static_cast<size_t>(static_cast<uint8_t>(stream[at + 1])) << 16) |
          (static_cast<size_t>(static_cast<uint8_t>(stream[at + 2])) << 8) |
          static_cast<size_t>(static_cast<uint8_t>(stream[at + 3]));
    at += 4;
    return true;
  };
  size_t at = pos;
  if (!length(at, pair.name_length) || !length(at, pair.value_length)) {
    return false;
  }
  pair.name_offset = at;
  pair.value_offset = at + pair.name_length;
  pair.end = pair.value_offset + pair.value_length;
  return pair.end <= stream.size();
}

}  // namespace gearbox::fcgi
