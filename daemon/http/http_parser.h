// HTTP/1.1 request codec: bytes in, one Request out at a time. Pure: no
// sockets, no clock. In the spirit of picohttpparser's phr_parse_request, each
// call reports complete / incomplete / error and how many bytes were consumed.
//
// How a request is read (RFC 9112):
//  1. the head, line by line (LineReader): every line must end in CRLF, and
//     is checked against the grammar (http_syntax.h) before llhttp sees it;
//     the checks give the target and each field's name and value, llhttp
//     the method, Content-Length and its own verdicts (the checked lines of
//     one read reach it in one call where they are contiguous);
//  2. at the end of the head, the checks that need all of it: Host, the body's
//     framing (6.1-6.3), Expect; llhttp is told there is no body;
//  3. the body, framed here: Content-Length bytes, or chunked (ChunkedDecoder).
// Every verdict is taken at the byte that decides it, so no way of splitting
// the input into reads changes it.
#pragma once

#include <llhttp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/http/chunked_decoder.h"
#include "daemon/http/http_syntax.h"
#include "daemon/http/line_reader.h"
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
    // kError: 400, 413, 414, 417, 431, 501 or 505; the connection closes.
    int error_status = 0;
    // kIncomplete: answer "100 Continue" now (once).
    bool send_continue = false;
    const char* error_reason = "";  // kError: short reason for logs, counters
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

  // Parse() stops at the end of each head (InBody() true), the body unread
  // (ServerCodec::StopAtBody).
  void StopAtBody() { stop_at_body_ = true; }
  // ServerCodec::SaveHead and ResumeHead (http_head_record.cc): the head as
  // method, target and fields, and the body's framing.
  size_t SaveHead(std::string_view buffer, std::string& record) const;
  bool ResumeHead(std::string_view record);

  // True once a byte of the current request has been seen (for timeouts: idle
  // vs header phase). The empty lines RFC 9112 2.2 lets precede a request
  // line (a CRLF some clients send after a body) do not start one.
  bool InRequest() const { return started_; }
  // True once the request head is complete and the body is being read.
  bool InBody() const { return phase_ == Phase::kBody; }

 private:
  enum class Phase { kHead, kBody };
  enum class Framing { kNone, kLength, kChunked };
  struct Span {
    uint32_t offset = 0;
    uint32_t length = 0;
  };
  struct HeaderSpan {
    Span name;
    Span value;
  };

  static const llhttp_settings_t* Settings();
  static int OnHeadersComplete(llhttp_t* p);
  static int OnMessageComplete(llhttp_t* p);

  // A view into the current buffer as offsets (they survive its moving).
  Span SpanOf(std::string_view s) const {
    return {static_cast<uint32_t>(s.data() - base_),
            static_cast<uint32_t>(s.size())};
  }
  std::string_view View(const Span& s) const {
    return std::string_view(base_ + s.offset, s.length);
  }
  void ResetLlhttp();
  void StartRequest();
  Result Fail(http::Verdict v);
  Result ParseHead(std::string_view buffer, bool* done);
  Result ParseBody(std::string_view buffer, Request& request);
  // Checked bytes llhttp has not seen yet, [begin, end) of the buffer: the
  // lines of one read go to llhttp in as few calls as the gaps it must not
  // see allow (llhttp is streaming: how its input is split does not change
  // what it finds).
  struct Unfed {
    size_t begin = 0;
    size_t end = 0;
  };
  http::Verdict ReadHead(std::string_view buffer, Unfed& unfed, bool* done);
  http::Verdict OnLine(std::string_view buffer, const http::LineEvent& e,
                       Unfed& unfed, bool* done);
  // Adds checked bytes [begin, end) to `unfed`, feeding it first if they do
  // not continue it (the OWS between a value and its CRLF).
  http::Verdict Queue(std::string_view buffer, Unfed& unfed, size_t begin,
                      size_t end);
  // Hands llhttp the unfed bytes; the verdict of its errors.
  http::Verdict Feed(std::string_view buffer, Unfed& unfed);
  // The checks that need the whole head (run inside OnHeadersComplete).
  http::Verdict CheckHead();
  http::Verdict CheckFraming(bool http11, bool has_te,
                             const http::CodingList& te);
  void StartBody();
  Result Complete(std::string_view buffer, size_t end, Request& request);
  void BuildRequest(std::string_view buffer, Request& request);

  // Idle keep-alive connections hold one parser each (10,000 of them in the
  // async model's budget of 1 KiB per connection): the layout is compact,
  // offsets are 32-bit (Parse refuses larger buffers), and what only some
  // requests need is allocated on the connection's first such request.
  struct Scratch {
    http::ChunkedDecoder decoder;
    std::vector<http::BodyPiece> pieces;
    std::string joined;   // the pieces copied together (non-contiguous)
    std::string target;   // "/" + query for an absolute-form without a path
    std::string resumed;  // a head taken over from another process
  };
  Scratch& scratch() {
    if (!scratch_) scratch_ = std::make_unique<Scratch>();
    return *scratch_;
  }

  HttpLimits limits_;
  llhttp_t parser_;
  const char* base_ = nullptr;  // start of the buffer in the current Parse call

  // Per-request state, reset by StartRequest(); vectors keep their capacity.
  uint32_t body_start_ = 0;
  http::LineReader lines_;
  http::RequestLineShape shape_;  // the request line so far
  uint32_t shape_fed_ = 0;
  Span url_;  // the request-target
  // Each field line's name and OWS-trimmed value, in order.
  std::vector<HeaderSpan> header_spans_;
  http::Verdict pending_;  // a verdict taken inside an llhttp callback
  uint64_t content_length_ = 0;
  Phase phase_ = Phase::kHead;
  Framing framing_ = Framing::kNone;
  http::TargetForm form_ = http::TargetForm::kOrigin;
  uint8_t minor_ = 1;     // the request line's minor version
  bool started_ = false;  // a request-line byte has arrived
  bool request_line_done_ = false;
  bool message_complete_ = false;
  bool keep_alive_ = true;
  bool expects_continue_ = false;
  bool continue_sent_ = false;
  bool stop_at_body_ = false;  // per connection, not reset per request
  bool resumed_ = false;       // the head's spans are into scratch_->resumed
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace gearbox
