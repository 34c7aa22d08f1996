// The HTTP grammar's tokens, request line and field lines (RFC 9112 2-5,
// RFC 9110 5.6). The request-target is checked in request_target.cc, list-
// valued fields and chunk extensions in field_values.cc.
#include "daemon/http/http_syntax.h"

#include <llhttp.h>
#include <strings.h>

#include "daemon/http/ascii.h"

namespace gearbox::http {
namespace {

using ascii::IsAlpha;
using ascii::IsControl;
using ascii::IsDigit;
using ascii::IsVisible;
using ascii::IsWs;

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
    if (IsControl(c)) return kMalformed;
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

}  // namespace gearbox::http
