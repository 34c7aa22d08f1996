#include "daemon/http/http_parser.h"

#include <strings.h>

#include <cstring>

namespace gearbox {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  return s;
}

// RFC 9110 5.6.2 tchar.
bool IsTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace

const llhttp_settings_t* HttpRequestParser::Settings() {
  // Shared by every parser: one copy instead of ~200 bytes per connection.
  static const llhttp_settings_t settings = [] {
    llhttp_settings_t s;
    llhttp_settings_init(&s);
    s.on_message_begin = &OnMessageBegin;
    s.on_url = &OnUrl;
    s.on_version = &OnVersion;
    s.on_header_field = &OnHeaderField;
    s.on_header_value = &OnHeaderValue;
    s.on_headers_complete = &OnHeadersComplete;
    s.on_body = &OnBody;
    s.on_message_complete = &OnMessageComplete;
    return s;
  }();
  return &settings;
}

HttpRequestParser::HttpRequestParser(HttpLimits limits) : limits_(limits) {
  llhttp_init(&parser_, HTTP_REQUEST, Settings());
  parser_.data = this;
  StartRequest();
}

void HttpRequestParser::StartRequest() {
  url_ = {};
  header_spans_.clear();
  in_value_ = false;
  body_spans_.clear();
  body_bytes_ = 0;
  head_end_ = 0;
  headers_complete_ = false;
  message_complete_ = false;
  continue_sent_ = false;
  expects_continue_ = false;
  pending_error_ = 0;
  pending_reason_ = "";
  fed_ = 0;
}

void HttpRequestParser::Extend(Span& span, uint32_t offset, size_t len) {
  if (span.length == 0) span.offset = offset;
  // llhttp hands out a token in pieces only at call boundaries, and every call
  // continues the same buffer, so pieces are contiguous.
  span.length = offset + static_cast<uint32_t>(len) - span.offset;
}

int HttpRequestParser::OnMessageBegin(llhttp_t*) { return 0; }

int HttpRequestParser::OnUrl(llhttp_t* p, const char* at, size_t len) {
  auto* self = static_cast<HttpRequestParser*>(p->data);
  Extend(self->url_, self->OffsetOf(at), len);
  // A header-less request's head is its request line: count it for the limit.
  self->head_end_ = self->OffsetOf(at) + static_cast<uint32_t>(len);
  return 0;
}

int HttpRequestParser::OnVersion(llhttp_t* p, const char* at, size_t len) {
  auto* self = static_cast<HttpRequestParser*>(p->data);
  // The request line ends with the version: a head without headers is measured
  // to there (not to the end of the target), so that only its final CRLFCRLF is
  // left uncounted, as for a head with headers.
  self->head_end_ = self->OffsetOf(at) + static_cast<uint32_t>(len);
  return 0;
}

int HttpRequestParser::OnHeaderField(llhttp_t* p, const char* at, size_t len) {
  auto* self = static_cast<HttpRequestParser*>(p->data);
  // Chunked trailers: dropped, never merged into the headers (RFC 9110 6.5.1).
  if (self->headers_complete_) return 0;
  if (self->in_value_ || self->header_spans_.empty()) {
    self->header_spans_.emplace_back();
    self->in_value_ = false;
  }
  uint32_t offset = self->OffsetOf(at);
  Extend(self->header_spans_.back().name, offset, len);
  self->head_end_ = offset + static_cast<uint32_t>(len);
  return 0;
}

int HttpRequestParser::OnHeaderValue(llhttp_t* p, const char* at, size_t len) {
  auto* self = static_cast<HttpRequestParser*>(p->data);
  if (self->headers_complete_) return 0;  // a trailer
  self->in_value_ = true;
  uint32_t offset = self->OffsetOf(at);
  HeaderSpan& h = self->header_spans_.back();
  if (h.value.length == 0) h.value.offset = offset;
  h.value.length = offset + static_cast<uint32_t>(len) - h.value.offset;
  self->head_end_ = offset + static_cast<uint32_t>(len);
  return 0;
}

int HttpRequestParser::OnHeadersComplete(llhttp_t* p) {
  auto* self = static_cast<HttpRequestParser*>(p->data);
  self->headers_complete_ = true;
  if (self->head_end_ > self->limits_.max_header_bytes) {
    self->pending_error_ = 431;
    self->pending_reason_ = "header_too_large";
    return -1;
  }
  if (p->http_major != 1) {
    self->pending_error_ = 505;
    self->pending_reason_ = "bad_version";
    return -1;
  }
  // llhttp 8.1 accepts "Name :", "Bad Name:" and obs-fold (a value continued on
  // the next line, CRLF kept in the value); RFC 9112 5.1/5.2 say reject all of
  // them with 400: a name must be a token, and a CRLF in a value could reach a
  // response header (echo). Such differences between parsers are what request
  // smuggling feeds on.
  for (const HeaderSpan& h : self->header_spans_) {
    const char* name = self->base_ + h.name.offset;
    bool bad_name = h.name.length == 0;
    for (uint32_t i = 0; i < h.name.length && !bad_name; ++i)
      bad_name = !IsTokenChar(static_cast<unsigned char>(name[i]));
    const char* value = self->base_ + h.value.offset;
    if (bad_name || memchr(value, '\n', h.value.length) != nullptr ||
        memchr(value, '\r', h.value.length) != nullptr) {
      self->pending_error_ = 400;
      self->pending_reason_ = "malformed";
      return -1;
    }
  }
  const bool chunked = (p->flags & F_CHUNKED) != 0;
  const bool has_length = (p->flags & F_CONTENT_LENGTH) != 0;
  if (has_length && p->content_length > self->limits_.max_body_bytes) {
    // Refuse before reading the body: the client may not even send it (Expect).
    self->pending_error_ = 413;
    self->pending_reason_ = "body_too_large";
    return -1;
  }
  if ((chunked || (has_length && p->content_length > 0)) &&
      !self->header_spans_.empty()) {
    // Look for "Expect: 100-continue" only when a body follows.
    const char* base = self->base_;
    for (const HeaderSpan& h : self->header_spans_) {
      std::string_view name(base + h.name.offset, h.name.length);
      if (EqualsNoCase(name, "expect")) {
        std::string_view value =
            Trim(std::string_view(base + h.value.offset, h.value.length));
        if (EqualsNoCase(value, "100-continue")) self->expects_continue_ = true;
      }
    }
  }
  return 0;
}

int HttpRequestParser::OnBody(llhttp_t* p, const char* at, size_t len) {
  auto* self = static_cast<HttpRequestParser*>(p->data);
  self->body_bytes_ += len;
  if (self->body_bytes_ > self->limits_.max_body_bytes) {  // chunked bodies
    self->pending_error_ = 413;
    self->pending_reason_ = "body_too_large";
    return -1;
  }
  uint32_t offset = self->OffsetOf(at);
  if (!self->body_spans_.empty()) {
    Span& last = self->body_spans_.back();
    if (last.offset + last.length == offset) {
      last.length += static_cast<uint32_t>(len);
      return 0;
    }
  }
  self->body_spans_.push_back({offset, static_cast<uint32_t>(len)});
  return 0;
}

int HttpRequestParser::OnMessageComplete(llhttp_t* p) {
  auto* self = static_cast<HttpRequestParser*>(p->data);
  self->message_complete_ = true;
  // Upgrade/CONNECT: llhttp pauses by itself (HPE_PAUSED_UPGRADE); pausing here
  // too would hide that and make the next call report an empty request.
  if (p->upgrade) return 0;
  return HPE_PAUSED;  // one request per Parse call: pipelined bytes wait their
                      // turn
}

HttpRequestParser::Result HttpRequestParser::Fail(int status,
                                                  const char* reason) {
  Result r;
  r.status = Status::kError;
  r.error_status = status;
  r.error_reason = reason;
  return r;
}

HttpRequestParser::Result HttpRequestParser::Parse(std::string_view buffer,
                                                   Request& request) {
  base_ = buffer.data();
  if (buffer.size() <= fed_) return Result{};  // nothing new
  if (buffer.size() > UINT32_MAX) return Fail(413, "body_too_large");
  const char* start = buffer.data() + fed_;
  const size_t len = buffer.size() - fed_;
  llhttp_errno_t err = llhttp_execute(&parser_, start, len);
  if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
    size_t consumed =
        static_cast<size_t>(llhttp_get_error_pos(&parser_) - base_);
    const bool upgrade = err == HPE_PAUSED_UPGRADE;
    if (upgrade) {
      // No protocol upgrades: answer the request, then close (RFC 9110 7.8
      // lets a server ignore Upgrade).
      llhttp_resume_after_upgrade(&parser_);
    } else {
      llhttp_resume(&parser_);
    }
    BuildRequest(buffer, request);
    if (upgrade) request.keep_alive = false;
    StartRequest();
    Result r;
    r.status = Status::kComplete;
    r.consumed = consumed;
    return r;
  }
  if (err != HPE_OK) {
    int status = pending_error_ ? pending_error_ : 400;
    const char* reason = pending_error_ ? pending_reason_ : "malformed";
    // llhttp also reports a malformed version token ("HTTP/1.1 junk", "HTTP/x")
    // as HPE_INVALID_VERSION; only "Invalid HTTP version" is a well-formed
    // version it does not support (1.2, 3.0, ...).
    if (!pending_error_ && err == HPE_INVALID_VERSION &&
        strcmp(llhttp_get_error_reason(&parser_), "Invalid HTTP version") ==
            0) {
      status = 505;
      reason = "bad_version";
    }
    // A head that had already passed the limit when llhttp met the bad byte
    // is 431, as it is when those bytes arrive in an earlier read: the first
    // violation in stream order decides, whatever the reads were.
    if (!pending_error_ && !headers_complete_ &&
        static_cast<size_t>(llhttp_get_error_pos(&parser_) - base_) >
            limits_.max_header_bytes + 4) {
      status = 431;
      reason = "header_too_large";
    }
    // The parser is in an error state; the connection closes after the answer.
    llhttp_init(&parser_, HTTP_REQUEST, Settings());
    parser_.data = this;
    StartRequest();
    return Fail(status, reason);
  }
  fed_ = buffer.size();
  // A complete head is measured up to its last header byte (head_end_), without
  // the final CRLFCRLF; allow those 4 bytes here too, or a head just at the
  // limit would pass in one read and fail when split inside its final CRLFCRLF.
  if (!headers_complete_ && fed_ > limits_.max_header_bytes + 4) {
    llhttp_init(&parser_, HTTP_REQUEST, Settings());
    parser_.data = this;
    StartRequest();
    return Fail(431, "header_too_large");
  }
  Result r;
  if (headers_complete_ && expects_continue_ && !continue_sent_) {
    continue_sent_ = true;
    r.send_continue = true;
  }
  return r;
}

void HttpRequestParser::BuildRequest(std::string_view buffer,
                                     Request& request) {
  const char* base = buffer.data();
  request.method =
      llhttp_method_name(static_cast<llhttp_method_t>(parser_.method));
  request.SetTarget(std::string_view(base + url_.offset, url_.length));
  request.version_major = parser_.http_major;
  request.version_minor = parser_.http_minor;
  request.headers.clear();
  for (const HeaderSpan& h : header_spans_) {
    request.headers.push_back(
        {std::string_view(base + h.name.offset, h.name.length),
         Trim(std::string_view(base + h.value.offset, h.value.length))});
  }
  if (body_spans_.empty()) {
    request.body = {};
  } else if (body_spans_.size() == 1) {
    request.body =
        std::string_view(base + body_spans_[0].offset, body_spans_[0].length);
  } else {
    body_buffer_.clear();
    for (const Span& s : body_spans_)
      body_buffer_.append(base + s.offset, s.length);
    request.body = body_buffer_;
  }
  request.keep_alive = llhttp_should_keep_alive(&parser_) != 0;
  request.is_head = parser_.method == HTTP_HEAD;
}

}  // namespace gearbox
