#include "daemon/http/http_syntax.h"

#include <llhttp.h>
#include <strings.h>

namespace gearbox::http {
namespace {

bool IsAlpha(unsigned char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }
bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool IsHex(unsigned char c) {
  return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}
bool IsWs(unsigned char c) { return c == ' ' || c == '\t'; }
bool IsVisible(unsigned char c) { return c > 0x20 && c < 0x7f; }

// RFC 3986 2.3 unreserved and 2.2 sub-delims.
bool IsUnreserved(unsigned char c) {
  return IsAlpha(c) || IsDigit(c) || c == '-' || c == '.' || c == '_' ||
         c == '~';
}
bool IsSubDelim(unsigned char c) {
  switch (c) {
    case '!':
    case '$':
    case '&':
    case '\'':
    case '(':
    case ')':
    case '*':
    case '+':
    case ',':
    case ';':
    case '=':
      return true;
    default:
      return false;
  }
}

// Bytes a path or query may hold (RFC 3986 3.3, 3.4: pchar, "/", "?"), plus
// the ones browsers send unencoded (the WHATWG URL Standard's path and query
// percent-encode sets leave them alone): "[ \ ] ^ ` { | }". RFC 9112 3.2 says
// SHOULD answer 400 to them, not MUST; refusing them would break browser
// traffic that nginx passes through. Never accepted: CTLs, SP, DEL, 8-bit,
// '"', '<', '>' and '#' (a fragment is never sent; parsers that disagree on
// where the path ends are an access-control bypass).
bool IsPathByte(unsigned char c) {
  if (IsUnreserved(c) || IsSubDelim(c)) return true;
  switch (c) {
    case ':':
    case '@':
    case '/':
    case '?':
    case '[':
    case '\\':
    case ']':
    case '^':
    case '`':
    case '{':
    case '|':
    case '}':
      return true;
    default:
      return false;
  }
}

// Path and query bytes with valid pct-encoding ("%" HEXDIG HEXDIG).
bool IsValidPathAndQuery(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '%') {
      if (i + 2 >= s.size() || !IsHex(s[i + 1]) || !IsHex(s[i + 2])) {
        return false;
      }
      i += 2;
    } else if (!IsPathByte(c)) {
      return false;
    }
  }
  return true;
}

// RFC 3986 3.1 scheme, followed by "://"; returns the length of "scheme://"
// or 0.
size_t SchemePrefix(std::string_view target) {
  if (target.empty() || !IsAlpha(target[0])) return 0;
  size_t i = 1;
  while (i < target.size() &&
         (IsAlpha(target[i]) || IsDigit(target[i]) || target[i] == '+' ||
          target[i] == '-' || target[i] == '.')) {
    ++i;
  }
  if (target.substr(i, 3) != "://") return 0;
  return i + 3;
}

bool IsPort(std::string_view s) {
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

// RFC 3986 3.2.2 IP-literal, without the brackets: an IPv6 address (checked
// for its alphabet only) or an IPvFuture.
bool IsIpLiteral(std::string_view s) {
  if (s.empty()) return false;
  if (s[0] == 'v' || s[0] == 'V') {
    size_t dot = s.find('.');
    if (dot == std::string_view::npos || dot < 2) return false;
    for (size_t i = 1; i < dot; ++i) {
      if (!IsHex(s[i])) return false;
    }
    if (dot + 1 == s.size()) return false;
    for (size_t i = dot + 1; i < s.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (!IsUnreserved(c) && !IsSubDelim(c) && c != ':') return false;
    }
    return true;
  }
  for (char c : s) {
    if (!IsHex(c) && c != ':' && c != '.') return false;
  }
  return s.find(':') != std::string_view::npos;
}

// RFC 3986 3.2.2 reg-name (IPv4 addresses included).
bool IsRegName(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '%') {
      if (i + 2 >= s.size() || !IsHex(s[i + 1]) || !IsHex(s[i + 2])) {
        return false;
      }
      i += 2;
    } else if (!IsUnreserved(c) && !IsSubDelim(c)) {
      return false;
    }
  }
  return true;
}

// "HTTP/" DIGIT "." DIGIT, RFC 9112 2.3 (case-sensitive).
bool ParseVersion(std::string_view v, int* major, int* minor) {
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || !IsDigit(v[5]) ||
      v[6] != '.' || !IsDigit(v[7])) {
    return false;
  }
  *major = v[5] - '0';
  *minor = v[7] - '0';
  return true;
}

}  // namespace

bool IsTchar(unsigned char c) {
  if (IsAlpha(c) || IsDigit(c)) return true;
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

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTchar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsWs(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsWs(s.back())) s.remove_suffix(1);
  return s;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

Verdict ParseRequestLine(std::string_view line, RequestLine* out) {
  // 1. Structure (what RequestLineShape checks byte by byte): exactly one
  //    SP between the parts (RFC 9112 3 lets a recipient be lenient, and then
  //    about every whitespace: gearbox is not), a token method, a target of
  //    visible ASCII, "HTTP/" DIGIT "." DIGIT.
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return kMalformed;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return kMalformed;
  RequestLine r;
  r.method = line.substr(0, sp1);
  r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (!IsToken(r.method) || r.target.empty()) return kMalformed;
  for (char c : r.target) {
    if (!IsVisible(static_cast<unsigned char>(c))) return kMalformed;
  }
  if (!ParseVersion(line.substr(sp2 + 1), &r.major, &r.minor)) {
    return kMalformed;
  }
  // 2. RFC 9110 15.6.6: 505 is about the major version; a higher minor
  //    version is served as the highest one implemented, 1.1 (RFC 9110 6.2).
  if (r.major != 1) return Verdict{505, "bad_version"};
  // 3. Method and target.
  if (Verdict v = CheckMethodAndTarget(r.method, r.target, &r.form); !v.ok()) {
    return v;
  }
  *out = r;
  return kOk;
}

Verdict CheckMethodAndTarget(std::string_view method, std::string_view target,
                             TargetForm* form) {
  // RFC 9110 9.3.6 / 15.6.2: gearbox is an origin server, not a tunnel.
  if (method == "CONNECT") return Verdict{501, "not_implemented"};
  if (target == "*") {
    // RFC 9112 3.2.4: asterisk-form is only for a server-wide OPTIONS.
    if (method != "OPTIONS") return kMalformed;
    *form = TargetForm::kAsterisk;
  } else if (!target.empty() && target[0] == '/') {
    if (!IsValidPathAndQuery(target)) return kMalformed;
    *form = TargetForm::kOrigin;
  } else if (SchemePrefix(target) > 0) {
    *form = TargetForm::kAbsolute;
    AbsoluteTarget parts;
    if (Verdict v = SplitAbsoluteTarget(target, &parts); !v.ok()) return v;
  } else {
    // Authority-form (3.2.3) is only for CONNECT, refused above.
    return kMalformed;
  }
  return kOk;
}

bool IsRecognizedMethod(std::string_view method) {
  // llhttp's own list: the methods the HTTP codec lets through.
#define GEARBOX_METHOD_NAME(num, name, string) #string,
  static constexpr std::string_view kMethods[] = {
      HTTP_METHOD_MAP(GEARBOX_METHOD_NAME)};
#undef GEARBOX_METHOD_NAME
  for (std::string_view m : kMethods) {
    if (m == method) return true;
  }
  return false;
}

bool RequestLineShape::Feed(std::string_view more) {
  static constexpr std::string_view kVersion = "HTTP/9.9";  // 9: a digit
  for (char ch : more) {
    if (bad_) break;
    const unsigned char c = static_cast<unsigned char>(ch);
    if (part_ < 2 && c == ' ') {
      bad_ = length_ == 0;
      ++part_;
      length_ = 0;
      continue;
    }
    if (part_ == 0) {
      bad_ = !IsTchar(c);
    } else if (part_ == 1) {
      bad_ = !IsVisible(c);
    } else {
      bad_ = length_ >= kVersion.size() ||
             (kVersion[length_] == '9' ? !IsDigit(c) : c != kVersion[length_]);
    }
    ++length_;
  }
  return !bad_;
}

Verdict OverlongRequestLine(std::string_view prefix) {
  RequestLineShape shape;
  if (!shape.Feed(prefix)) return kMalformed;
  if (shape.in_method()) return Verdict{501, "method_too_long"};
  return Verdict{414, "uri_too_long"};
}

Verdict CheckFieldLine(std::string_view line) {
  if (line.empty() || IsWs(line[0])) return kMalformed;
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
    return kMalformed;
  }
  for (char ch : line.substr(colon + 1)) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return kMalformed;
  }
  return kOk;
}

Verdict OverlongFieldLine(std::string_view prefix) {
  const size_t colon = prefix.find(':');
  Verdict v = colon == std::string_view::npos
                  ? (prefix.empty() || IsToken(prefix) ? kOk : kMalformed)
                  : CheckFieldLine(prefix);
  return v.ok() ? Verdict{431, "header_too_large"} : v;
}

void SplitFieldLine(std::string_view line, std::string_view* name,
                    std::string_view* value) {
  const size_t colon = line.find(':');
  *name = line.substr(0, colon);
  *value = TrimOws(line.substr(colon + 1));
}

bool IsValidHost(std::string_view host) {
  if (host.empty()) return true;  // RFC 9112 3.2: "Host:" for no authority
  if (host[0] == '[') {
    const size_t close = host.find(']');
    if (close == std::string_view::npos ||
        !IsIpLiteral(host.substr(1, close - 1))) {
      return false;
    }
    std::string_view rest = host.substr(close + 1);
    return rest.empty() || (rest[0] == ':' && IsPort(rest.substr(1)));
  }
  const size_t colon = host.find(':');
  if (colon == std::string_view::npos) return IsRegName(host);
  return IsRegName(host.substr(0, colon)) && IsPort(host.substr(colon + 1));
}

Verdict SplitAbsoluteTarget(std::string_view target, AbsoluteTarget* out) {
  const size_t prefix = SchemePrefix(target);
  std::string_view scheme = target.substr(0, prefix - 3);
  if (!EqualsNoCase(scheme, "http") && !EqualsNoCase(scheme, "https")) {
    return kMalformed;
  }
  std::string_view rest = target.substr(prefix);
  const size_t end = rest.find_first_of("/?");
  out->authority = rest.substr(0, end);
  out->path_and_query =
      end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  // RFC 9110 4.2.4: userinfo is likely there to mislead; 4.2.1: an http URI
  // with an empty host MUST be rejected.
  const std::string_view host =
      out->authority.empty() || out->authority[0] == '['
          ? out->authority
          : out->authority.substr(0, out->authority.find(':'));
  if (out->authority.find('@') != std::string_view::npos || host.empty() ||
      !IsValidHost(out->authority) ||
      !IsValidPathAndQuery(out->path_and_query)) {
    return kMalformed;
  }
  return kOk;
}

void CodingList::Add(std::string_view field_value) {
  while (true) {
    const size_t comma = field_value.find(',');
    std::string_view element = TrimOws(field_value.substr(0, comma));
    if (!element.empty()) {  // RFC 9110 5.6.1: empty elements are ignored
      ++elements_;
      const size_t semi = element.find(';');
      std::string_view name = TrimOws(element.substr(0, semi));
      if (!IsToken(name)) malformed_ = true;
      // "chunked" has no parameters (RFC 9112 7.1): "chunked;x=1" is not it.
      last_chunked_ =
          semi == std::string_view::npos && EqualsNoCase(name, "chunked");
      if (EqualsNoCase(name, "chunked")) ++chunked_;
    }
    if (comma == std::string_view::npos) break;
    field_value.remove_prefix(comma + 1);
  }
}

Coding CodingList::Result() const {
  if (malformed_) return Coding::kMalformed;
  if (!last_chunked_) return Coding::kNotFinal;
  if (chunked_ > 1) return Coding::kDuplicate;
  if (elements_ > 1) return Coding::kUnsupported;
  return Coding::kChunked;
}

bool ListHasToken(std::string_view field_value, std::string_view token) {
  while (true) {
    const size_t comma = field_value.find(',');
    if (EqualsNoCase(TrimOws(field_value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) return false;
    field_value.remove_prefix(comma + 1);
  }
}

bool OnlyContinueExpected(std::string_view field_value, bool* has_continue) {
  while (true) {
    const size_t comma = field_value.find(',');
    std::string_view member = TrimOws(field_value.substr(0, comma));
    if (EqualsNoCase(member, "100-continue")) {
      *has_continue = true;
    } else if (!member.empty()) {
      return false;
    }
    if (comma == std::string_view::npos) return true;
    field_value.remove_prefix(comma + 1);
  }
}

bool IsValidChunkExt(std::string_view rest) {
  size_t i = 0;
  auto skip_ws = [&](size_t at) {
    while (at < rest.size() && IsWs(rest[at])) ++at;
    return at;
  };
  auto token_end = [&](size_t at) {
    while (at < rest.size() && IsTchar(static_cast<unsigned char>(rest[at])))
      ++at;
    return at;
  };
  while (i < rest.size()) {
    size_t j = skip_ws(i);
    if (j == rest.size() || rest[j] != ';') return false;  // BWS then ';' only
    j = skip_ws(j + 1);
    const size_t name_end = token_end(j);
    if (name_end == j) return false;
    i = name_end;
    j = skip_ws(name_end);
    if (j == rest.size() || rest[j] != '=') continue;
    j = skip_ws(j + 1);
    if (j < rest.size() && rest[j] == '"') {
      // quoted-string, RFC 9110 5.6.4: qdtext / quoted-pair.
      ++j;
      bool closed = false;
      while (j < rest.size() && !closed) {
        const unsigned char c = static_cast<unsigned char>(rest[j]);
        if (c == '"') {
          closed = true;
        } else if (c == '\\') {
          if (j + 1 == rest.size()) return false;
          const unsigned char q = static_cast<unsigned char>(rest[j + 1]);
          if ((q < 0x20 && q != '\t') || q == 0x7f) return false;
          ++j;
        } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
          return false;
        }
        ++j;
      }
      if (!closed) return false;
      i = j;
    } else {
      const size_t value_end = token_end(j);
      if (value_end == j) return false;
      i = value_end;
    }
  }
  return true;
}

}  // namespace gearbox::http
