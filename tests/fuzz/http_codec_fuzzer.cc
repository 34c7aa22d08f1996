// libFuzzer target: the HTTP/1.1 ServerCodec (llhttp + HttpRequestParser +
// http_writer), driven the way the models drive it.
//
// The input is the byte stream a client sends on one connection (so the seed
// corpus is plain HTTP). For two sets of limits (the defaults and tiny ones
// that make every limit reachable) the stream is fed three ways: in one read,
// in pseudo-random reads (the split points come from a hash of the input) and
// byte by byte (short inputs only). Each way, like ServeBlocking, the driver
// parses every complete request in the buffer, serializes a response for it,
// drops `consumed` bytes and keeps going (pipelining) until the codec wants
// more bytes, fails, or a response closes the connection.
//
// Oracles, besides ASan/UBSan: every split must give the same requests and the
// same final verdict (the codec's documented contract), and each request must
// satisfy invariants that matter for request smuggling and response splitting
// (no CR/LF in header values or the target, no Content-Length together with
// Transfer-Encoding, a body of exactly Content-Length bytes, ...).
#include <strings.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"
#include "daemon/codec.h"
#include "daemon/request.h"
#include "daemon/response.h"
#include "tests/fuzz/fuzz_util.h"

namespace gearbox {

// Defined in daemon/http/http_codec.cc (declared in daemon/codec.cc).
std::unique_ptr<ServerCodec> MakeHttpCodec(const LimitsConfig& limits);

namespace {

using fuzz::Fail;
using fuzz::Printable;

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  return s;
}

bool IsTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != 0;
}

std::string Describe(const Request& r, size_t max = 200) {
  std::string s = std::string(r.method) + " " + Printable(r.target, max) +
                  " HTTP/" + std::to_string(r.version_major) + "." +
                  std::to_string(r.version_minor) + "\n";
  for (const Header& h : r.headers) {
    s += "  [" + Printable(h.name, max) + "]: [" + Printable(h.value, max) +
         "]\n";
  }
  s += "  body(" + std::to_string(r.body.size()) +
       ")=" + Printable(r.body, max) + "\n";
  return s;
}

void CheckRequest(const Request& r, size_t consumed, size_t buffered) {
  const std::string d = Describe(r);
  if (consumed == 0 || consumed > buffered) {
    Fail("consumed out of range", std::to_string(consumed) + " of " +
                                      std::to_string(buffered) + "\n" + d);
  }
  if (r.method.empty()) Fail("empty method", d);
  if (r.version_major != 1) Fail("non-1.x version accepted", d);
  if (r.target.find_first_of("\r\n") != std::string_view::npos) {
    Fail("CR/LF in target", d);
  }
  // path/query are views of target.
  if (r.query.empty() && r.target.find('?') == std::string_view::npos) {
    if (r.path != r.target) Fail("path != target without '?'", d);
  } else if (std::string(r.path) + "?" + std::string(r.query) !=
             std::string(r.target)) {
    Fail("path?query != target", d);
  }
  // Exercise the lookups handlers use.
  (void)r.FindHeader("host");
  (void)r.QueryParam("ms");
  (void)r.QueryParam("");
  int content_lengths = 0;
  std::string_view content_length;
  int transfer_encoding_lines = 0;
  std::string transfer_encoding_all;  // every line, as one list
  int hosts = 0;
  for (const Header& h : r.headers) {
    if (EqualsNoCase(h.name, "host")) ++hosts;
    if (h.name.empty()) Fail("empty header name", d);
    for (unsigned char c : h.name) {
      if (!IsTokenChar(c)) Fail("header name is not a token", d);
    }
    if (h.value.find_first_of("\r\n") != std::string_view::npos) {
      Fail("CR/LF in header value (response splitting via echo)", d);
    }
    if (Trim(h.value).size() != h.value.size()) {
      Fail("header value not trimmed", d);
    }
    if (EqualsNoCase(h.name, "content-length")) {
      if (content_lengths > 0 && h.value != content_length) {
        Fail("conflicting Content-Length headers accepted", d);
      }
      ++content_lengths;
      content_length = h.value;
    }
    if (EqualsNoCase(h.name, "transfer-encoding")) {
      ++transfer_encoding_lines;
      transfer_encoding_all.append(h.value).push_back(',');
    }
  }
  // Upgrade is ignored (the connection stays HTTP/1.1) and CONNECT refused,
  // so every accepted request is held to the framing rules below.
  if (r.method == "CONNECT") Fail("CONNECT accepted", d);
  // RFC 9112 3.2: an HTTP/1.1 request has exactly one Host (an absolute-form
  // target supplies one for HTTP/1.0).
  if (hosts > 1) Fail("more than one Host accepted", d);
  if (hosts == 0 && r.version_minor >= 1) Fail("HTTP/1.1 without Host", d);
  if (content_lengths > 0 && transfer_encoding_lines > 0) {
    // RFC 9112 6.3: a server MAY reject; llhttp does unless lenient. Either
    // way the body must not have been framed by Content-Length.
    Fail("Content-Length together with Transfer-Encoding accepted", d);
  }
  if (transfer_encoding_lines > 0) {
    // RFC 9112 6.1/6.3: the only coding accepted is exactly one "chunked",
    // across every Transfer-Encoding line (empty list elements ignored, RFC
    // 9110 5.6.1); anything else is refused (400 or 501).
    int elements = 0;
    bool chunked_last = false;
    std::string_view rest = transfer_encoding_all;
    while (true) {
      const size_t comma = rest.find(',');
      std::string_view e = Trim(rest.substr(0, comma));
      if (!e.empty()) {
        ++elements;
        chunked_last = EqualsNoCase(e, "chunked");
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    if (elements != 1 || !chunked_last) {
      Fail("Transfer-Encoding other than one chunked accepted", d);
    }
  }
  if (content_lengths > 0 && transfer_encoding_lines == 0) {
    uint64_t n = 0;
    auto [end, ec] =
        std::from_chars(content_length.data(),
                        content_length.data() + content_length.size(), n);
    if (ec != std::errc() ||
        end != content_length.data() + content_length.size()) {
      Fail("malformed Content-Length accepted", d);
    }
    if (n != r.body.size()) Fail("body size != Content-Length", d);
  }
}

// A handler stand-in: echo-like, with a status and options picked from the
// request so that bodiless statuses, HEAD, close and extra headers all occur.
void FillResponse(const Request& r, Response& response) {
  static constexpr int kStatuses[] = {200, 200, 201, 204, 304,
                                      404, 100, 503, 999, 500};
  response.Reset();
  response.status = kStatuses[r.path.size() % std::size(kStatuses)];
  std::string_view type = r.FindHeader("content-type");
  if (!type.empty()) response.content_type = type;
  response.body.assign(r.body);
  if (!r.QueryParam("close").empty()) response.close = true;
  if (std::string_view id = r.FindHeader("x-request-id"); !id.empty()) {
    response.extra_headers = "X-Request-Id: ";
    response.extra_headers.append(id);
    response.extra_headers.append("\r\n");
  }
  if (response.status == 503) response.extra_headers += "Retry-After: 1\r\n";
}

// Owned copy of what happened, for comparing the ways of feeding.
std::string Record(const Request& r, size_t consumed) {
  std::string s = "complete consumed=" + std::to_string(consumed) + " ";
  s += Describe(r, SIZE_MAX);
  s += r.keep_alive ? "  keep-alive" : "  close";
  s += r.is_head ? " head\n" : "\n";
  return s;
}

std::string Run(const uint8_t* data, size_t size, fuzz::Split split,
                uint64_t seed, const LimitsConfig& limits) {
  std::unique_ptr<ServerCodec> codec = MakeHttpCodec(limits);
  const std::vector<size_t> chunks = fuzz::Schedule(split, size, seed);
  std::string trace;
  std::string in;   // unconsumed bytes
  std::string out;  // what would be written to the socket
  fuzz::MovingBuffer moving;
  Request request;
  Response response;
  size_t fed = 0;
  bool closed = false;
  for (size_t chunk : chunks) {
    in.append(reinterpret_cast<const char*>(data) + fed, chunk);
    fed += chunk;
    for (;;) {
      std::string_view view = moving.Snapshot(in);
      ServerCodec::Result r = codec->Parse(view, request, out);
      if (r.status == ServerCodec::Status::kIncomplete) break;
      if (r.status == ServerCodec::Status::kError) {
        if (r.error_status < 400 || r.error_status > 599) {
          Fail("error status out of range", std::to_string(r.error_status));
        }
        trace += "error " + std::to_string(r.error_status) + " " +
                 r.error_reason + "\n";
        closed = true;
        break;
      }
      if (r.status == ServerCodec::Status::kClose) {
        trace += "close\n";
        closed = true;
        break;
      }
      CheckRequest(request, r.consumed, view.size());
      trace += Record(request, r.consumed);
      FillResponse(request, response);
      // The views must still be valid here: the models serialize before they
      // consume.
      const bool close = codec->AppendResponse(request, response, false, out);
      in.erase(0, r.consumed);
      if (close) {
        trace += "server close\n";
        closed = true;
        break;
      }
      if (out.size() > (1u << 20)) out.clear();  // "written"
    }
    if (closed) break;
  }
  if (!closed) {
    trace += std::string("incomplete in_request=") +
             (codec->InRequest() ? "1" : "0") +
             " in_body=" + (codec->InBody() ? "1" : "0") + "\n";
    // What a model does on a timeout or overload mid-connection.
    codec->AppendError(codec->InRequest() ? 408 : 503, "Retry-After: 1\r\n",
                       out);
  }
  return trace;
}

LimitsConfig DefaultLimits() { return LimitsConfig{}; }

LimitsConfig TinyLimits() {
  LimitsConfig l;
  l.max_header_bytes = 96;  // below the loader's minimum: reach the limit
  l.max_body_bytes = 24;
  return l;
}

}  // namespace
}  // namespace gearbox

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gearbox;
  const uint64_t seed = fuzz::Hash(data, size);
  for (const LimitsConfig& limits : {DefaultLimits(), TinyLimits()}) {
    fuzz::CheckSplitsAgree(
        size,
        "max_header_bytes=" + std::to_string(limits.max_header_bytes) +
            " max_body_bytes=" + std::to_string(limits.max_body_bytes),
        [&](fuzz::Split split) { return Run(data, size, split, seed, limits); },
        [](const std::string& trace) { return trace; });
  }
  return 0;
}
