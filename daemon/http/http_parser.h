// HTTP/1.1 request codec around llhttp: bytes in, one Request out at a time.
// Pure: no sockets, no clock. In the spirit of picohttpparser's
// phr_parse_request, each call reports complete / incomplete / error and how
// many bytes were consumed.
#pragma once

#include <llhttp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/request.h"

namespace gearbox {

struct HttpLimits {
  size_t max_header_bytes = 16384;
  uint64_t max_body_bytes = 1048576;
};

class HttpRequestParser {
 public:
  enum class Status { kComplete, kIncomplete, kError };
  struct Result {
    Status status = Status::kIncomplete;
    size_t consumed = 0;  // kComplete: bytes of `buffer` this request used
    int error_status =
        0;  // kError: 400, 413, 431 or 505; the connection closes
    bool send_continue =
        false;  // kIncomplete: answer "100 Continue" now (once)
    const char* error_reason =
        "";  // kError: short reason for logs and counters
  };

  explicit HttpRequestParser(HttpLimits limits);
  HttpRequestParser(const HttpRequestParser&) = delete;
  HttpRequestParser& operator=(const HttpRequestParser&) = delete;

  // `buffer` holds every unconsumed byte, starting at the current request's
  // first byte; each call must see what the previous calls saw plus (possibly)
  // more. Only the new bytes are parsed, so a request trickling in costs
  // O(total bytes). On kComplete, `request` views point into `buffer` (or an
  // internal body buffer for chunked bodies) and stay valid until the next
  // call; the caller then drops `consumed` bytes and calls again with the rest
  // for a pipelined request.
  Result Parse(std::string_view buffer, Request& request);

  // True once any byte of the current request has been seen (for timeouts: idle
  // vs header phase).
  bool InRequest() const { return fed_ > 0; }
  // True once the request head is complete and the body is being read.
  bool InBody() const { return headers_complete_; }

 private:
  struct Span {
    uint32_t offset = 0;
    uint32_t length = 0;
  };
  struct HeaderSpan {
    Span name;
    Span value;
  };

  static const llhttp_settings_t* Settings();
  static int OnMessageBegin(llhttp_t* p);
  static int OnUrl(llhttp_t* p, const char* at, size_t len);
  static int OnVersion(llhttp_t* p, const char* at, size_t len);
  static int OnHeaderField(llhttp_t* p, const char* at, size_t len);
  static int OnHeaderValue(llhttp_t* p, const char* at, size_t len);
  static int OnHeadersComplete(llhttp_t* p);
  static int OnBody(llhttp_t* p, const char* at, size_t len);
  static int OnMessageComplete(llhttp_t* p);

  static void Extend(Span& span, uint32_t offset, size_t len);
  uint32_t OffsetOf(const char* at) const {
    return static_cast<uint32_t>(at - base_);
  }
  void StartRequest();
  Result Fail(int status, const char* reason);
  void BuildRequest(std::string_view buffer, Request& request);

  HttpLimits limits_;
  llhttp_t parser_;
  const char* base_ = nullptr;  // start of the buffer in the current Parse call
  size_t fed_ = 0;              // bytes of the current request already parsed

  // Per-request state, reset by StartRequest(); vectors keep their capacity.
  Span url_;
  std::vector<HeaderSpan> header_spans_;
  bool in_value_ = false;
  std::vector<Span> body_spans_;
  uint64_t body_bytes_ = 0;
  uint32_t head_end_ = 0;  // offset just past the last header byte seen
  bool headers_complete_ = false;
  bool message_complete_ = false;
  bool continue_sent_ = false;
  bool expects_continue_ = false;
  int pending_error_ = 0;
  const char* pending_reason_ = "";
  std::string body_buffer_;  // chunked bodies are copied here (non-contiguous)
};

}  // namespace gearbox
