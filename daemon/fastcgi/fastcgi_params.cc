// The PARAMS stream read as an HTTP request: the checks an HTTP request head
// gets (EndParams) and the Request built from the CGI variables
// (BuildRequest). Views into params_ and body_, no copies.
#include <charconv>

#include "daemon/fastcgi/fastcgi_parser.h"
#include "daemon/http/http_syntax.h"

namespace gearbox {
namespace {

char AsciiUpper(char c) { return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c; }
char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// "USER_AGENT" -> "User-Agent", in place (CGI's inverse of nginx's mapping).
void HeaderCase(char* s, size_t n) {
  bool word_start = true;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] == '_') {
      s[i] = '-';
      word_start = true;
    } else {
      s[i] = word_start ? AsciiUpper(s[i]) : AsciiLower(s[i]);
      word_start = false;
    }
  }
}

// As over HTTP: a CR or LF inside a header value could be echoed into a
// response head (header splitting), and NUL or another CTL makes a field
// value invalid (RFC 9110 5.5). nginx never sends them; they are refused.
bool HasControlChar(std::string_view value) {
  for (char ch : value) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return true;
  }
  return false;
}

// What EndParams asks of the params that carry request headers, in one pass.
struct HeaderParams {
  bool control_char = false;  // in an HTTP_* or CONTENT_TYPE value
  int hosts = 0;
  int lengths = 0;
  std::string_view host;    // the last HTTP_HOST
  std::string_view length;  // the last CONTENT_LENGTH
};

HeaderParams GatherHeaderParams(std::string_view params,
                                const std::vector<fcgi::PairSpan>& pairs) {
  HeaderParams h;
  for (const fcgi::PairSpan& p : pairs) {
    const std::string_view name = params.substr(p.name_offset, p.name_length);
    const std::string_view value =
        params.substr(p.value_offset, p.value_length);
    const bool header = name.substr(0, 5) == "HTTP_" || name == "CONTENT_TYPE";
    if (header && HasControlChar(value)) {
      h.control_char = true;
      return h;
    }
    if (name == "HTTP_HOST") {
      ++h.hosts;
      h.host = value;
    } else if (name == "CONTENT_LENGTH") {
      ++h.lengths;
      h.length = value;
    }
  }
  return h;
}

// The client's HTTP version as the front end reports it in SERVER_PROTOCOL
// ("HTTP/1.0", "HTTP/2.0", "HTTP/2"); 1.1 when absent or unreadable.
void ReadVersion(std::string_view protocol, Request& request) {
  request.version_major = 1;
  request.version_minor = 1;
  if (protocol.size() < 6 || protocol.substr(0, 5) != "HTTP/" ||
      !IsDigit(protocol[5])) {
    return;
  }
  request.version_major = static_cast<uint8_t>(protocol[5] - '0');
  const bool minor =
      protocol.size() == 8 && protocol[6] == '.' && IsDigit(protocol[7]);
  request.version_minor = minor ? static_cast<uint8_t>(protocol[7] - '0') : 0;
}

}  // namespace

// The end of PARAMS: the questions an HTTP request head raises, asked of the
// web server's variables and answered as the HTTP codec answers them
// (daemon/http/http_syntax.h; cases in tests/unit/fastcgi). Questions the web
// server has already settled on the client's connection are not asked again:
// Host being present, Expect, Transfer-Encoding, the protocol version.
FastCgiParser::Result FastCgiParser::EndParams(std::string& out) {
  params_done_ = true;
  if (params_parsed_ != params_.size()) return Fail("bad_params");
  std::string_view method;
  if (!FindParam("REQUEST_METHOD", &method) || method.empty()) {
    return Answer(400, "no_method", out);
  }
  if (!http::IsToken(method)) return Answer(400, "malformed", out);
  const HeaderParams h = GatherHeaderParams(params_, pairs_);
  if (h.control_char) return Answer(400, "bad_header_value", out);
  if (http::Verdict v = CheckTarget(method); !v.ok()) {
    return Answer(v.status, v.reason, out);
  }
  // RFC 9112 3.2: one Host, and a valid one.
  if (h.hosts > 1 || (h.hosts == 1 && !http::IsValidHost(h.host))) {
    return Answer(400, "bad_host", out);
  }
  if (http::Verdict v = ReadContentLength(h.lengths, h.length); !v.ok()) {
    return Answer(v.status, v.reason, out);
  }
  return Continue();
}

// RFC 9110 9.3.6, 9.1 and RFC 9112 3.2: CONNECT and methods the HTTP codec
// does not know get 501; REQUEST_URI is a request-target like any other.
http::Verdict FastCgiParser::CheckTarget(std::string_view method) {
  std::string_view uri;
  uri_form_ = http::TargetForm::kOrigin;
  if (FindParam("REQUEST_URI", &uri) && !uri.empty()) {
    http::Verdict v = http::CheckMethodAndTarget(method, uri, &uri_form_);
    if (!v.ok()) return v;
  } else if (method == "CONNECT") {
    return http::Verdict{501, "not_implemented"};
  }
  if (!http::IsRecognizedMethod(method)) {
    return http::Verdict{501, "not_implemented"};
  }
  return http::kOk;
}

// RFC 9112 6.3 / RFC 9110 8.6: one CONTENT_LENGTH of 1*DIGIT (nginx sends it
// empty when there is no body). One that does not fit in 64 bits is invalid,
// as over HTTP; one that fits but exceeds the limit gets 413 before any STDIN
// arrives.
http::Verdict FastCgiParser::ReadContentLength(int count,
                                               std::string_view length) {
  expected_body_ = -1;
  if (count > 1) return http::Verdict{400, "bad_framing"};
  if (length.empty()) return http::kOk;
  uint64_t n = 0;
  auto [end, ec] =
      std::from_chars(length.data(), length.data() + length.size(), n);
  const bool digits =
      length.find_first_not_of("0123456789") == std::string_view::npos;
  if (!digits || ec != std::errc() || end != length.data() + length.size()) {
    return http::Verdict{400, "bad_framing"};
  }
  if (n > max_body_bytes_) return http::Verdict{413, "body_too_large"};
  expected_body_ = static_cast<int64_t>(n);
  return http::kOk;
}

bool FastCgiParser::FindParam(std::string_view name,
                              std::string_view* value) const {
  // O(n) scan, n = param count (a few dozen from nginx's fastcgi_params).
  for (const fcgi::PairSpan& p : pairs_) {
    if (Name(p) == name) {
      *value = Value(p);
      return true;
    }
  }
  return false;
}

void FastCgiParser::BuildRequest(Request& request) {
  std::string_view method, uri, query;
  FindParam("REQUEST_METHOD", &method);
  const bool has_query = FindParam("QUERY_STRING", &query);
  request.method = method;
  std::string_view protocol;
  FindParam("SERVER_PROTOCOL", &protocol);
  ReadVersion(protocol, request);
  request.remote_addr = {};
  FindParam("REMOTE_ADDR", &request.remote_addr);
  request.keep_alive = keep_conn_;
  request.is_head = method == "HEAD";
  request.body = body_;
  std::string_view authority;
  if (FindParam("REQUEST_URI", &uri) && !uri.empty()) {
    authority = TargetFromUri(uri, request);
    if (has_query) request.query = query;
  } else {
    TargetFromScriptName(query, request);
  }
  AddHeaders(authority, request);
}

// Sets the target and path from REQUEST_URI; returns the authority of an
// absolute-form one (empty otherwise).
std::string_view FastCgiParser::TargetFromUri(std::string_view uri,
                                              Request& request) {
  std::string_view authority;
  if (uri_form_ == http::TargetForm::kAbsolute) {
    // As over HTTP (RFC 9112 3.2.2): route on the path, and the host is the
    // target's.
    http::AbsoluteTarget parts;
    http::SplitAbsoluteTarget(uri, &parts);
    authority = parts.authority;
    uri = parts.path_and_query;
    if (uri.empty() || uri[0] == '?') {
      derived_.assign("/").append(uri);  // RFC 9110 4.2.3: "" is "/"
      uri = derived_;
    }
  }
  request.SetTarget(uri);  // path = REQUEST_URI up to '?'
  return authority;
}

// CGI without REQUEST_URI (RFC 3875 4.1.5, 4.1.13): the target is
// SCRIPT_NAME + PATH_INFO [+ "?" QUERY_STRING].
void FastCgiParser::TargetFromScriptName(std::string_view query,
                                         Request& request) {
  std::string_view script, path_info;
  FindParam("SCRIPT_NAME", &script);
  FindParam("PATH_INFO", &path_info);
  derived_.assign(script);
  derived_.append(path_info);
  const size_t path_length = derived_.size();
  if (!query.empty()) {
    derived_.push_back('?');
    derived_.append(query);
  }
  request.target = derived_;
  request.path = std::string_view(derived_).substr(0, path_length);
  request.query = query;
}

// Headers come back from CGI names: HTTP_USER_AGENT -> User-Agent, plus
// CONTENT_TYPE and CONTENT_LENGTH (which CGI sends without the HTTP_ prefix;
// nginx sends them empty when absent, so empty ones are not headers). The
// names are rewritten in place in params_, which this parser owns; every
// lookup by CGI name is done by then. An absolute-form target's authority
// replaces Host.
void FastCgiParser::AddHeaders(std::string_view authority, Request& request) {
  request.headers.clear();
  for (const fcgi::PairSpan& p : pairs_) {
    const std::string_view name = Name(p);
    size_t skip = 0;
    if (name.size() > 5 && name.substr(0, 5) == "HTTP_") {
      skip = 5;
    } else if ((name != "CONTENT_TYPE" && name != "CONTENT_LENGTH") ||
               p.value_length == 0) {
      continue;
    }
    char* s = params_.data() + p.name_offset + skip;
    const size_t n = p.name_length - skip;
    HeaderCase(s, n);
    std::string_view value = Value(p);
    if (!authority.empty() && std::string_view(s, n) == "Host") {
      value = authority;
      authority = {};
    }
    request.headers.push_back(Header{std::string_view(s, n), value});
  }
  if (!authority.empty()) request.headers.push_back({"Host", authority});
}

}  // namespace gearbox
