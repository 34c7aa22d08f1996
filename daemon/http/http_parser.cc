#include "daemon/http/http_parser.h"

#include <algorithm>
#include <cstring>

namespace gearbox {

using http::LineEvent;
using http::Verdict;

const llhttp_settings_t* HttpRequestParser::Settings() {
  // Shared by every parser: one copy instead of ~200 bytes per connection.
  static const llhttp_settings_t settings = [] {
    llhttp_settings_t s;
    llhttp_settings_init(&s);
    // No on_url, on_header_field, on_header_value: the target and the fields
    // are taken from the checked lines (OnLine), which llhttp tokenizes the
    // same way; its verdicts do not depend on callbacks.
    s.on_headers_complete = &OnHeadersComplete;
    s.on_message_complete = &OnMessageComplete;
    return s;
  }();
  return &settings;
}

HttpRequestParser::HttpRequestParser(HttpLimits limits) : limits_(limits) {
  ResetLlhttp();
  StartRequest();
}

void HttpRequestParser::ResetLlhttp() {
  llhttp_init(&parser_, HTTP_REQUEST, Settings());
  parser_.data = this;
  // HTTP/1.2..1.9 are served as 1.1 (RFC 9110 6.2); llhttp 8.1 accepts them
  // only with this flag, which has no setter. The version is checked before
  // llhttp sees it (http::ParseRequestLine).
  parser_.lenient_flags |= LENIENT_VERSION;
  // Transfer-Encoding is checked here (http::CodingList): llhttp 8.1 refuses
  // valid lists such as "chunked," (RFC 9110 5.6.1: empty elements are
  // ignored).
  parser_.lenient_flags |= LENIENT_TRANSFER_ENCODING;
}

void HttpRequestParser::StartRequest() {
  phase_ = Phase::kHead;
  started_ = false;
  lines_.Start(0);
  shape_ = {};
  shape_fed_ = 0;
  request_line_done_ = false;
  form_ = http::TargetForm::kOrigin;
  minor_ = 1;
  url_ = {};
  header_spans_.clear();
  message_complete_ = false;
  pending_ = {};
  framing_ = Framing::kNone;
  content_length_ = 0;
  keep_alive_ = true;
  expects_continue_ = false;
  continue_sent_ = false;
  body_start_ = 0;
  resumed_ = false;
  if (scratch_) scratch_->pieces.clear();
}

int HttpRequestParser::OnHeadersComplete(llhttp_t* p) {
  auto* self = static_cast<HttpRequestParser*>(p->data);
  self->pending_ = self->CheckHead();
  if (!self->pending_.ok()) return -1;
  // RFC 9110 7.8: a server MAY ignore Upgrade; gearbox does, and keeps the
  // connection (llhttp would stop parsing after this request).
  p->upgrade = 0;
  return 1;  // no body for llhttp: the body is framed here (ParseBody)
}

int HttpRequestParser::OnMessageComplete(llhttp_t* p) {
  auto* self = static_cast<HttpRequestParser*>(p->data);
  self->message_complete_ = true;
  return HPE_PAUSED;  // llhttp must not read on into the body
}

HttpRequestParser::Result HttpRequestParser::Fail(Verdict v) {
  // The parser may be in an error state; the connection closes after the
  // answer.
  ResetLlhttp();
  StartRequest();
  Result r;
  r.status = Status::kError;
  r.error_status = v.status;
  r.error_reason = v.reason;
  return r;
}

HttpRequestParser::Result HttpRequestParser::Parse(std::string_view buffer,
                                                   Request& request) {
  base_ = buffer.data();
  // Offsets are 32-bit; a buffer that large is far past every limit anyway.
  if (buffer.size() > UINT32_MAX) return Fail({413, "body_too_large"});
  if (phase_ == Phase::kHead) {
    bool done = false;
    Result r = ParseHead(buffer, &done);
    if (!done) return r;
  }
  if (stop_at_body_) return Result{};
  return ParseBody(buffer, request);
}

HttpRequestParser::Result HttpRequestParser::ParseHead(std::string_view buffer,
                                                       bool* done) {
  Unfed unfed;
  const Verdict v = ReadHead(buffer, unfed, done);
  // Whatever ReadHead decided, llhttp first sees the lines checked before:
  // its verdict on one of them comes first, as it would line by line.
  if (Verdict fed = Feed(buffer, unfed); !fed.ok()) return Fail(fed);
  if (!v.ok()) return Fail(v);
  return Result{};
}

Verdict HttpRequestParser::ReadHead(std::string_view buffer, Unfed& unfed,
                                    bool* done) {
  for (;;) {
    LineEvent e = lines_.Next(buffer, limits_.max_header_bytes);
    if (e.kind == LineEvent::kLine) {
      Verdict v = OnLine(buffer, e, unfed, done);
      if (!v.ok() || *done) return v;
      continue;
    }
    switch (e.kind) {
      case LineEvent::kNeedMore:
        if (e.end > e.begin) started_ = true;
        if (!request_line_done_) {
          // Garbage is refused as it arrives (a TLS hello has no CRLF).
          const size_t from = std::max<size_t>(shape_fed_, e.begin);
          shape_fed_ = static_cast<uint32_t>(e.end);
          if (from < e.end && !shape_.Feed(buffer.substr(from, e.end - from))) {
            return http::kMalformed;
          }
        }
        return http::kOk;
      case LineEvent::kOverLimit: {
        std::string_view prefix = buffer.substr(e.begin, e.end - e.begin);
        return request_line_done_ ? http::OverlongFieldLine(prefix)
                                  : http::OverlongRequestLine(prefix);
      }
      default:  // RFC 9112 2.2: a bare CR or LF is invalid, never a line end
        return http::kMalformed;
    }
  }
}

// Each complete line is checked (http_syntax.h), then queued for llhttp: a
// verdict is always taken on the first bad line, by the first check that
// fails on it, whatever the reads were.
Verdict HttpRequestParser::OnLine(std::string_view buffer, const LineEvent& e,
                                  Unfed& unfed, bool* done) {
  std::string_view line = buffer.substr(e.begin, e.end - e.begin);
  if (!request_line_done_) {
    if (line.empty()) {
      // RFC 9112 2.2: empty lines before the request line are ignored (they
      // count towards the head limit).
      if (e.end + 2 > limits_.max_header_bytes) return http::kMalformed;
      return http::kOk;
    }
    started_ = true;
    http::RequestLine parsed;
    if (Verdict v = http::ParseRequestLine(line, &parsed); !v.ok()) return v;
    form_ = parsed.form;
    minor_ = static_cast<uint8_t>(parsed.minor);
    url_ = SpanOf(parsed.target);
    request_line_done_ = true;
    return Queue(buffer, unfed, e.begin, e.end + 2);
  }
  if (!line.empty()) {
    std::string_view name, value;
    if (Verdict v = http::CheckFieldLine(line, &name, &value); !v.ok()) {
      return v;
    }
    header_spans_.push_back({SpanOf(name), SpanOf(value)});
    // Without the value's trailing OWS, which llhttp 8.1 refuses after a
    // Content-Length ("5\t") although RFC 9110 5.5 strips it from any value.
    const size_t value_end =
        value.empty()
            ? e.begin + name.size() + 1
            : static_cast<size_t>(value.data() - buffer.data()) + value.size();
    if (Verdict v = Queue(buffer, unfed, e.begin, value_end); !v.ok()) return v;
    return Queue(buffer, unfed, e.end, e.end + 2);
  }
  // The empty line: the head is complete.
  if (Verdict v = Queue(buffer, unfed, e.begin, e.end + 2); !v.ok()) return v;
  if (Verdict v = Feed(buffer, unfed); !v.ok()) return v;
  if (!message_complete_) return http::kMalformed;  // llhttp disagrees
  *done = true;
  phase_ = Phase::kBody;
  body_start_ = static_cast<uint32_t>(e.end + 2);
  StartBody();
  return http::kOk;
}

void HttpRequestParser::StartBody() {
  if (framing_ != Framing::kChunked) return;
  http::ChunkedDecoder::Limits l;
  l.max_body_bytes = limits_.max_body_bytes;
  l.max_ext_bytes = limits_.max_header_bytes;
  l.max_trailer_bytes = limits_.max_header_bytes;
  scratch().decoder.Start(body_start_, l);
}

Verdict HttpRequestParser::Queue(std::string_view buffer, Unfed& unfed,
                                 size_t begin, size_t end) {
  if (unfed.end != begin) {  // a gap llhttp must not see: feed what is before
    if (Verdict v = Feed(buffer, unfed); !v.ok()) return v;
    unfed.begin = begin;
  }
  unfed.end = end;
  return http::kOk;
}

Verdict HttpRequestParser::Feed(std::string_view buffer, Unfed& unfed) {
  if (unfed.end == unfed.begin) return http::kOk;
  const char* end = buffer.data() + unfed.end;
  llhttp_errno_t err = llhttp_execute(&parser_, buffer.data() + unfed.begin,
                                      unfed.end - unfed.begin);
  unfed = {};
  if (err == HPE_PAUSED && message_complete_) {
    // Paused at the end of the head, which only the empty line, always the
    // last byte fed, can end: llhttp must have used every byte.
    if (llhttp_get_error_pos(&parser_) != end) return http::kMalformed;
    llhttp_resume(&parser_);
    err = HPE_OK;
  }
  if (err == HPE_OK) return http::kOk;
  if (!pending_.ok()) return pending_;
  // The method passed the token check (ParseRequestLine), so llhttp does not
  // know it: RFC 9110 9.1, an unrecognized method SHOULD get 501.
  if (err == HPE_INVALID_METHOD) return Verdict{501, "not_implemented"};
  return http::kMalformed;
}

HttpRequestParser::Result HttpRequestParser::ParseBody(std::string_view buffer,
                                                       Request& request) {
  switch (framing_) {
    case Framing::kNone:
      return Complete(buffer, body_start_, request);
    case Framing::kLength:
      if (buffer.size() - body_start_ >= content_length_) {
        return Complete(buffer, body_start_ + content_length_, request);
      }
      break;
    case Framing::kChunked: {
      http::ChunkedDecoder::Result c =
          scratch_->decoder.Decode(buffer, scratch_->pieces);
      if (c.status == http::ChunkedDecoder::Status::kError) {
        return Fail(c.error);
      }
      if (c.status == http::ChunkedDecoder::Status::kDone) {
        return Complete(buffer, c.end, request);
      }
      break;
    }
  }
  Result r;
  if (expects_continue_ && !continue_sent_) {
    continue_sent_ = true;
    r.send_continue = true;
  }
  return r;
}

HttpRequestParser::Result HttpRequestParser::Complete(std::string_view buffer,
                                                      size_t end,
                                                      Request& request) {
  BuildRequest(buffer, request);
  StartRequest();
  Result r;
  r.status = Status::kComplete;
  r.consumed = end;
  return r;
}

}  // namespace gearbox
