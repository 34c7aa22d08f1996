// The HTTP grammar's tokens, request line and field lines (RFC 9112 2-5,
// RFC 9110 5.6). The request-target is checked in request_target.cc, list-
// valued fields and chunk extensions in field_values.cc.
#include "daemon/http/http_syntax.h"

#include <llhttp.h>

#include "daemon/http/ascii.h"
#include "daemon/http/char_class.h"

namespace gearbox::http {
namespace {

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
  return chars::Is(static_cast<char>(c), chars::kTchar);
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

Verdict ParseRequestLine(std::string_view line, RequestLine* out) {
  // 1. Structure (what RequestLineShape checks byte by byte): exactly one
  //    SP between the parts (RFC 9112 3 lets a recipient be lenient, and then
  //    about every whitespace: gearbox is not), a token method, a target of
  //    visible ASCII, "HTTP/" DIGIT "." DIGIT. SP is neither a tchar nor
  //    visible, so each part runs to the first byte outside its class, which
  //    must be the SP.
  const size_t n = line.size();
  size_t sp1 = 0;
  while (sp1 < n && chars::Is(line[sp1], chars::kTchar)) ++sp1;
  if (sp1 == 0 || sp1 == n || line[sp1] != ' ') return kMalformed;
  size_t sp2 = sp1 + 1;
  while (sp2 < n && chars::Is(line[sp2], chars::kVisible)) ++sp2;
  if (sp2 == sp1 + 1 || sp2 == n || line[sp2] != ' ') return kMalformed;
  RequestLine r;
  r.method = line.substr(0, sp1);
  r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
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
  std::string_view name, value;
  return CheckFieldLine(line, &name, &value);
}

Verdict CheckFieldLine(std::string_view line, std::string_view* name,
                       std::string_view* value) {
  // Neither SP, HTAB nor ':' is a tchar: the name runs to the first byte
  // outside the class, which must be the first ':' and not the first byte.
  const size_t n = line.size();
  size_t colon = 0;
  while (colon < n && chars::Is(line[colon], chars::kTchar)) ++colon;
  if (colon == 0 || colon == n || line[colon] != ':') return kMalformed;
  for (size_t i = colon + 1; i < n; ++i) {
    if (chars::Is(line[i], chars::kControl)) return kMalformed;
  }
  *name = line.substr(0, colon);
  *value = TrimOws(line.substr(colon + 1));
  return kOk;
}

Verdict OverlongFieldLine(std::string_view prefix) {
  const size_t colon = prefix.find(':');
  Verdict v = colon == std::string_view::npos
                  ? (prefix.empty() || IsToken(prefix) ? kOk : kMalformed)
                  : CheckFieldLine(prefix);
  return v.ok() ? Verdict{431, "header_too_large"} : v;
}

}  // namespace gearbox::http
