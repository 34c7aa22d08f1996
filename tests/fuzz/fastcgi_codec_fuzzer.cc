// libFuzzer target: the FastCGI ServerCodec (daemon/fastcgi/), driven the way
// the models drive it.
//
// The input is the record stream a web server sends on one connection (the
// seed corpus holds raw FastCGI records: BEGIN_REQUEST, PARAMS, STDIN,
// ABORT_REQUEST, GET_VALUES...). As in http_codec_fuzzer, the stream is fed in
// one read, in pseudo-random reads and byte by byte, under default and tiny
// limits; every complete request gets a response (echo-like, sometimes large
// enough to need several STDOUT records) before its bytes are consumed.
//
// Oracles, besides ASan/UBSan: every split gives the same requests, the same
// final verdict and the same output bytes; the output is a well-formed record
// stream (version 1, a known server-to-web-server type, padding to 8, each
// response ends with an empty STDOUT and an END_REQUEST) and each response's
// STDOUT carries the CGI head and then exactly the body.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "config/config.h"
#include "daemon/codec.h"
#include "daemon/fastcgi/fastcgi_codec.h"
#include "daemon/fastcgi/fastcgi_protocol.h"
#include "daemon/request.h"
#include "daemon/response.h"
#include "tests/fuzz/fuzz_util.h"

namespace gearbox {
namespace {

using fuzz::Fail;
using fuzz::Printable;

constexpr size_t kBigBody = 2 * fcgi::kMaxContent + 17;

std::string Describe(const Request& r, size_t max = 200) {
  std::string s = Printable(r.method, max) + " " + Printable(r.target, max) +
                  " path=" + Printable(r.path, max) +
                  " query=" + Printable(r.query, max) + "\n";
  for (const Header& h : r.headers) {
    s += "  [" + Printable(h.name, max) + "]: [" + Printable(h.value, max) +
         "]\n";
  }
  s += "  body(" + std::to_string(r.body.size()) +
       ")=" + Printable(r.body, max) +
       (r.keep_alive ? " keep-conn" : " no-keep-conn") +
       (r.is_head ? " head\n" : "\n");
  return s;
}

void CheckRequest(const Request& r, size_t consumed, size_t buffered,
                  const LimitsConfig& limits) {
  const std::string d = Describe(r);
  if (consumed == 0 || consumed > buffered) {
    Fail("consumed out of range", std::to_string(consumed) + " of " +
                                      std::to_string(buffered) + "\n" + d);
  }
  if (r.method.empty()) Fail("empty REQUEST_METHOD accepted", d);
  if (r.body.size() > static_cast<size_t>(limits.max_body_bytes)) {
    Fail("body larger than max_body_bytes accepted", d);
  }
  if (r.is_head != (r.method == "HEAD")) Fail("is_head != (method == HEAD)", d);
  for (const Header& h : r.headers) {
    if (h.name.empty()) Fail("empty header name", d);
  }
  (void)r.FindHeader("content-type");
  (void)r.QueryParam("ms");
}

void FillResponse(const Request& r, Response& response) {
  static constexpr int kStatuses[] = {200, 200, 201, 204, 304,
                                      404, 100, 503, 999, 500};
  response.Reset();
  response.status = kStatuses[r.path.size() % std::size(kStatuses)];
  std::string_view type = r.FindHeader("content-type");
  if (!type.empty()) response.content_type = type;
  if (!r.QueryParam("big").empty()) {
    response.body.assign(kBigBody, 'b');  // several STDOUT records
  } else {
    response.body.assign(r.body);
  }
  if (!r.QueryParam("close").empty()) response.close = true;
  if (response.status == 503) response.extra_headers = "Retry-After: 1\r\n";
}

// A response the driver produced, in order.
struct Expected {
  std::string body;  // what must follow the CGI head on STDOUT
  bool with_body;
};

// Walks `out` as FastCGI records from the application; checks framing and
// that each response's STDOUT is "<head>\r\n\r\n<body>".
void CheckOutput(std::string_view out, const std::vector<Expected>& expected,
                 const std::string& trace) {
  std::map<uint16_t, std::string> stdout_streams;
  size_t next = 0;  // index into expected
  size_t pos = 0;
  auto fail = [&](const char* what) {
    Fail(what, "at output offset " + std::to_string(pos) + "\n" + trace +
                   "output: " + Printable(out, 400));
  };
  while (pos < out.size()) {
    if (out.size() - pos < fcgi::kHeaderSize) fail("truncated record header");
    const fcgi::RecordHeader h = fcgi::DecodeHeader(out.data() + pos);
    if (h.version != fcgi::kVersion1) fail("record version != 1");
    if (out[pos + 7] != 0) fail("reserved byte not zero");
    const size_t total =
        fcgi::kHeaderSize + h.content_length + h.padding_length;
    if (out.size() - pos < total) fail("truncated record");
    if ((h.content_length + h.padding_length) % 8 != 0 ||
        h.padding_length > 7) {
      fail("record not padded to a multiple of 8");
    }
    std::string_view content =
        out.substr(pos + fcgi::kHeaderSize, h.content_length);
    switch (h.type) {
      case fcgi::kStdout:
        if (h.request_id == fcgi::kNullRequestId) fail("STDOUT for id 0");
        stdout_streams[h.request_id].append(content);
        break;
      case fcgi::kEndRequest: {
        if (h.content_length != 8) fail("END_REQUEST body is not 8 bytes");
        if (h.request_id == fcgi::kNullRequestId) fail("END_REQUEST for id 0");
        const uint8_t protocol_status = static_cast<uint8_t>(content[4]);
        if (protocol_status > fcgi::kUnknownRole) fail("bad protocol status");
        auto it = stdout_streams.find(h.request_id);
        if (protocol_status == fcgi::kRequestComplete &&
            it != stdout_streams.end()) {
          const std::string& s = it->second;
          size_t head_end = s.find("\r\n\r\n");
          if (s.rfind("Status: ", 0) != 0 || head_end == std::string::npos) {
            fail("STDOUT does not start with a CGI head");
          }
          // Responses the driver produced are matched in order; error answers
          // from the codec (400/413/431, 408/503) can only come last.
          if (next < expected.size() &&
              s.size() - (head_end + 4) ==
                  (expected[next].with_body ? expected[next].body.size() : 0)) {
            if (expected[next].with_body &&
                s.compare(head_end + 4, std::string::npos,
                          expected[next].body) != 0) {
              fail("STDOUT body differs from the response body");
            }
            ++next;
          }
          stdout_streams.erase(it);
        }
        break;
      }
      case fcgi::kGetValuesResult:
      case fcgi::kUnknownType:
        if (h.request_id != fcgi::kNullRequestId) {
          fail("management reply with a request id");
        }
        if (h.type == fcgi::kGetValuesResult) {
          fcgi::PairSpan pair;
          for (size_t p = 0; p < content.size(); p = pair.end) {
            if (!fcgi::DecodePair(content, p, pair)) {
              fail("GET_VALUES_RESULT with a broken pair");
            }
          }
        }
        break;
      default:
        fail("record type an application must not send");
    }
    pos += total;
  }
  if (next != expected.size()) {
    Fail("a response is missing from the output",
         std::to_string(next) + " of " + std::to_string(expected.size()) +
             " found\n" + trace + "output: " + Printable(out, 400));
  }
}

struct Outcome {
  std::string trace;
  std::string out;
  bool operator==(const Outcome&) const = default;
};

Outcome Run(const uint8_t* data, size_t size, fuzz::Split split, uint64_t seed,
            const LimitsConfig& limits) {
  std::unique_ptr<ServerCodec> codec = MakeFastCgiCodec(limits);
  const std::vector<size_t> chunks = fuzz::Schedule(split, size, seed);
  Outcome o;
  std::string in;
  fuzz::MovingBuffer moving;
  Request request;
  Response response;
  std::vector<Expected> expected;
  size_t fed = 0;
  bool closed = false;
  for (size_t chunk : chunks) {
    in.append(reinterpret_cast<const char*>(data) + fed, chunk);
    fed += chunk;
    for (;;) {
      std::string_view view = moving.Snapshot(in);
      ServerCodec::Result r = codec->Parse(view, request, o.out);
      if (r.status == ServerCodec::Status::kIncomplete) break;
      if (r.status == ServerCodec::Status::kError) {
        o.trace += "error " + std::to_string(r.error_status) + " " +
                   r.error_reason + "\n";
        closed = true;
        break;
      }
      if (r.status == ServerCodec::Status::kClose) {
        o.trace += "close\n";
        closed = true;
        break;
      }
      CheckRequest(request, r.consumed, view.size(), limits);
      o.trace += "complete consumed=" + std::to_string(r.consumed) + " " +
                 Describe(request, SIZE_MAX);
      FillResponse(request, response);
      const bool bodiless = response.status == 204 || response.status == 304 ||
                            response.status < 200;
      const bool with_body = !bodiless && !request.is_head;
      // Models may pass a trimmed copy of the request: the codec must not
      // need its views.
      Request trimmed;
      trimmed.keep_alive = request.keep_alive;
      const bool close = codec->AppendResponse(trimmed, response, false, o.out);
      expected.push_back(
          {with_body ? response.body : std::string(), with_body});
      in.erase(0, r.consumed);
      if (close != (response.close || !request.keep_alive)) {
        Fail("AppendResponse close != response.close || !FCGI_KEEP_CONN",
             o.trace);
      }
      if (close) {
        o.trace += "server close\n";
        closed = true;
        break;
      }
    }
    if (closed) break;
  }
  if (!closed) {
    o.trace += std::string("incomplete in_request=") +
               (codec->InRequest() ? "1" : "0") +
               " in_body=" + (codec->InBody() ? "1" : "0") + "\n";
    codec->AppendError(codec->InRequest() ? 408 : 503, "Retry-After: 1\r\n",
                       o.out);
  }
  CheckOutput(o.out, expected, o.trace);
  return o;
}

LimitsConfig DefaultLimits() { return LimitsConfig{}; }

LimitsConfig TinyLimits() {
  LimitsConfig l;
  l.max_header_bytes = 96;
  l.max_body_bytes = 24;
  l.max_connections = 3;
  return l;
}

}  // namespace
}  // namespace gearbox

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gearbox;
  const uint64_t seed = fuzz::Hash(data, size);
  for (const LimitsConfig& limits : {DefaultLimits(), TinyLimits()}) {
    fuzz::CheckSplitsAgree(
        size, "max_header_bytes=" + std::to_string(limits.max_header_bytes),
        [&](fuzz::Split split) { return Run(data, size, split, seed, limits); },
        [](const Outcome& o) {
          return o.trace + "out: " + fuzz::Printable(o.out, 400) + "\n";
        });
  }
  return 0;
}
