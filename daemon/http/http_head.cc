// The request-head checks that need the whole head (Host, framing, Expect,
// keep-alive), and turning a parsed request into a Request.
#include "daemon/http/http_parser.h"

namespace gearbox {

using http::EqualsNoCase;
using http::Verdict;

Verdict HttpRequestParser::CheckHead() {
  const bool http11 = minor_ >= 1;
  int hosts = 0;
  std::string_view host;
  bool has_te = false;
  http::CodingList te;
  bool close = false;
  bool keep_alive = false;
  bool expectation_ok = true;
  bool has_continue = false;
  for (const HeaderSpan& h : header_spans_) {
    std::string_view name = View(h.name);
    std::string_view value = View(h.value);  // OWS-trimmed (OnLine)
    if (EqualsNoCase(name, "host")) {
      ++hosts;
      host = value;
    } else if (EqualsNoCase(name, "transfer-encoding")) {
      has_te = true;
      te.Add(value);
    } else if (EqualsNoCase(name, "connection")) {
      close = close || http::ListHasToken(value, "close");
      keep_alive = keep_alive || http::ListHasToken(value, "keep-alive");
    } else if (EqualsNoCase(name, "expect")) {
      expectation_ok =
          http::OnlyContinueExpected(value, &has_continue) && expectation_ok;
    }
  }
  // RFC 9112 3.2: MUST answer 400 to an HTTP/1.1 request without Host, and to
  // any request with more than one Host or an invalid one.
  if (hosts > 1) return Verdict{400, "bad_host"};
  if (hosts == 0 && http11) return Verdict{400, "no_host"};
  if (hosts == 1 && !http::IsValidHost(host)) return Verdict{400, "bad_host"};
  if (Verdict v = CheckFraming(http11, has_te, te); !v.ok()) return v;
  // RFC 9110 10.1.1: MAY answer 417 to an expectation other than
  // 100-continue.
  if (!expectation_ok) return Verdict{417, "expectation_failed"};
  const bool has_body = framing_ == Framing::kChunked ||
                        (framing_ == Framing::kLength && content_length_ > 0);
  // ... and MUST ignore 100-continue in an HTTP/1.0 request.
  expects_continue_ = has_continue && http11 && has_body;
  // RFC 9112 9.3: "close" ends the connection; HTTP/1.0 persists only with
  // "keep-alive".
  keep_alive_ = !close && (http11 || keep_alive);
  return http::kOk;
}

// RFC 9112 6.1-6.3: how long the body is, or why that cannot be known.
Verdict HttpRequestParser::CheckFraming(bool http11, bool has_te,
                                        const http::CodingList& te) {
  const bool has_length = (parser_.flags & F_CONTENT_LENGTH) != 0;
  if (has_te) {
    // 6.1: Transfer-Encoding in HTTP/1.0 means faulty framing; with
    // Content-Length it is a smuggling attempt (6.3, 11.2): 400 and close.
    if (!http11 || has_length) return Verdict{400, "bad_framing"};
    switch (te.Result()) {
      case http::Coding::kChunked:
        framing_ = Framing::kChunked;
        return http::kOk;
      case http::Coding::kUnsupported:
        // 6.1: a transfer coding the server does not understand SHOULD get
        // 501.
        return Verdict{501, "unsupported_coding"};
      default:
        // 6.3 (4): chunked not final: MUST 400; chunked twice (7.1) or a
        // malformed list: the length cannot be known either.
        return Verdict{400, "bad_framing"};
    }
  }
  if (has_length) {
    // llhttp has checked the value (1*DIGIT, one field line, no overflow).
    content_length_ = parser_.content_length;
    if (content_length_ > limits_.max_body_bytes) {
      // Refused before the body: the client may not even send it (Expect).
      return Verdict{413, "body_too_large"};
    }
    framing_ = Framing::kLength;
  }
  return http::kOk;
}

void HttpRequestParser::BuildRequest(std::string_view buffer,
                                     Request& request) {
  const char* base = buffer.data();
  // The head's fields: in the buffer, or in the record it came in.
  const char* head = resumed_ ? scratch_->resumed.data() : base;
  request.method =
      llhttp_method_name(static_cast<llhttp_method_t>(parser_.method));
  const std::string_view target(head + url_.offset, url_.length);
  std::string_view authority;
  if (form_ == http::TargetForm::kAbsolute) {
    // RFC 9112 3.2.2: route on the path, take the host from the target.
    http::AbsoluteTarget parts;
    http::SplitAbsoluteTarget(target, &parts);
    authority = parts.authority;
    std::string_view origin_form = parts.path_and_query;
    if (origin_form.empty() || origin_form[0] == '?') {
      // RFC 9110 4.2.3: an empty path is "/".
      scratch().target.assign("/").append(origin_form);
      origin_form = scratch().target;
    }
    request.SetTarget(origin_form);
  } else {
    request.SetTarget(target);
  }
  request.version_major = 1;
  // RFC 9110 6.2: a higher minor version is served as 1.1.
  request.version_minor = minor_ >= 1 ? 1 : 0;
  request.headers.clear();
  bool host_replaced = false;
  for (const HeaderSpan& h : header_spans_) {
    std::string_view name(head + h.name.offset, h.name.length);
    std::string_view value(head + h.value.offset, h.value.length);
    if (!authority.empty() && EqualsNoCase(name, "host")) {
      value = authority;  // the received Host MUST be ignored
      host_replaced = true;
    }
    request.headers.push_back({name, value});
  }
  if (!authority.empty() && !host_replaced) {
    request.headers.push_back({"Host", authority});
  }
  if (framing_ == Framing::kLength) {
    request.body = std::string_view(base + body_start_, content_length_);
  } else if (framing_ == Framing::kNone || scratch_->pieces.empty()) {
    request.body = {};
  } else if (scratch_->pieces.size() == 1) {
    const http::BodyPiece& p = scratch_->pieces[0];
    request.body = std::string_view(base + p.offset, p.length);
  } else {
    std::string& joined = scratch_->joined;
    joined.clear();
    for (const http::BodyPiece& p : scratch_->pieces) {
      joined.append(base + p.offset, p.length);
    }
    request.body = joined;
  }
  request.keep_alive = keep_alive_;
  request.is_head = parser_.method == HTTP_HEAD;
}

}  // namespace gearbox
