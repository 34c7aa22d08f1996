// The HTTP/1.1 grammar gearbox enforces on top of llhttp 8.1 (RFC 9112, RFC
// 9110). Pure functions over bytes. llhttp 8.1 (Debian bookworm's) tokenizes
// the head, but it accepts what RFC 9112 says to reject (a bare CR ending the
// head, obs-fold, "GET  /", a '#' or a tab in the target, HTTP/1.x with x > 1
// only when lenient) and rejects what it says to accept (BWS and quoted-pairs
// in chunk extensions): every line is checked here before llhttp sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gearbox::http {

// What a check found: status 0 means acceptable.
struct Verdict {
  int status = 0;
  const char* reason = "";
  bool ok() const { return status == 0; }
};

inline constexpr Verdict kOk{};
inline constexpr Verdict kMalformed{400, "malformed"};

// RFC 9110 5.6.2 tchar / token.
bool IsTchar(unsigned char c);
bool IsToken(std::string_view s);
// RFC 3986 HEXDIG: the digit's value, or -1 for any other character.
int HexDigitValue(char c);
// Strips leading and trailing OWS (SP / HTAB), RFC 9110 5.6.3.
std::string_view TrimOws(std::string_view s);
// ASCII case-insensitive equality (inline: every field name is compared so).
inline bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const unsigned char x = static_cast<unsigned char>(a[i]);
    const unsigned char y = static_cast<unsigned char>(b[i]);
    if (x == y) continue;
    // Equal but for bit 0x20, and letters: 'A'..'Z' against 'a'..'z'.
    const unsigned char lower = x | 0x20;
    if (lower != (y | 0x20) || lower < 'a' || lower > 'z') return false;
  }
  return true;
}

// RFC 9112 3.2: which request-target form a target has.
enum class TargetForm { kOrigin, kAbsolute, kAuthority, kAsterisk };

struct RequestLine {
  std::string_view method;
  std::string_view target;
  TargetForm form = TargetForm::kOrigin;
  int major = 1;
  int minor = 1;
};

// Checks a whole request line (without its CRLF), RFC 9112 3: structure
// (400), version (505 for a major version other than 1), CONNECT (501:
// gearbox is no proxy), then the target's form and syntax (400).
Verdict ParseRequestLine(std::string_view line, RequestLine* out);
// The method and request-target checks of ParseRequestLine (after its
// structure and version ones): CONNECT 501, then the target's form (*form)
// and syntax (400). The FastCGI codec asks the same of REQUEST_METHOD and
// REQUEST_URI.
Verdict CheckMethodAndTarget(std::string_view method, std::string_view target,
                             TargetForm* form);
// True for the methods llhttp 8.1 parses (its HTTP_METHOD_MAP): the HTTP
// codec answers any other token with 501 (RFC 9110 9.1), and so does FastCGI.
bool IsRecognizedMethod(std::string_view method);

// Follows a request line as it arrives, so that garbage is refused at once
// rather than at the head limit: Feed() turns false for good when no request
// line can start with the bytes fed so far (a structure ParseRequestLine
// refuses with 400). O(1) per byte.
class RequestLineShape {
 public:
  bool Feed(std::string_view more);
  bool in_method() const { return part_ == 0; }

 private:
  uint32_t length_ = 0;  // bytes of the current part so far
  uint8_t part_ = 0;     // 0: method, 1: target, 2: version
  bool bad_ = false;
};

// The status for a request line cut at the head limit (`prefix` is the line up
// to the first byte past it): 400 if the prefix is already invalid, else by
// where the cut falls: in the method 501 (RFC 9112 3: a method longer than any
// implemented SHOULD get it), later 414 (MUST, for a target too long).
Verdict OverlongRequestLine(std::string_view prefix);

// Checks a field line (without its CRLF), RFC 9112 5: no leading whitespace
// (obs-fold, 5.2; whitespace before the first field, 2.2), a token name right
// before the colon (5.1), a value of field-vchar / SP / HTAB only (RFC 9110
// 5.5: no NUL, CR, LF or other CTL).
Verdict CheckFieldLine(std::string_view line);
// The same check; on success, also the line's name and OWS-trimmed value.
Verdict CheckFieldLine(std::string_view line, std::string_view* name,
                       std::string_view* value);
// The status for a field line cut at a size limit: 400 if the prefix is
// already invalid, else 431 (RFC 6585 5; RFC 9112 5: an "appropriate 4xx").
Verdict OverlongFieldLine(std::string_view prefix);

// RFC 9110 7.2 Host = uri-host [ ":" port ]; an empty value is valid.
bool IsValidHost(std::string_view host);

// An absolute-form target's parts (RFC 9112 3.2.2). `path` is empty when the
// URI has none (it then means "/").
struct AbsoluteTarget {
  std::string_view authority;
  std::string_view path_and_query;
};
// "http"/"https" only, no userinfo (RFC 9110 4.2.4), a non-empty valid host
// (4.2.1). Call only for TargetForm::kAbsolute.
Verdict SplitAbsoluteTarget(std::string_view target, AbsoluteTarget* out);

// How a request's Transfer-Encoding list frames its body (RFC 9112 6.1, 6.3).
enum class Coding {
  kChunked,      // exactly "chunked" (empty list elements ignored)
  kNotFinal,     // chunked is not the final coding, or absent: 400
  kDuplicate,    // chunked more than once: 400
  kUnsupported,  // another coding before chunked: 501
  kMalformed,    // an element that is not a transfer-coding: 400
};
// Feed every Transfer-Encoding field value in order.
class CodingList {
 public:
  void Add(std::string_view field_value);
  Coding Result() const;

 private:
  int elements_ = 0;
  int chunked_ = 0;
  bool last_chunked_ = false;
  bool malformed_ = false;
};

// Connection options (RFC 9110 7.6.1) and expectations (10.1.1), case-
// insensitive token lists; empty elements ignored.
bool ListHasToken(std::string_view field_value, std::string_view token);
// True when every member of the Expect value is "100-continue".
bool OnlyContinueExpected(std::string_view field_value, bool* has_continue);

// RFC 9112 7.1.1: what follows the chunk-size on a chunk line, without the
// CRLF: *( BWS ";" BWS ext-name [ BWS "=" BWS ( token / quoted-string ) ] ).
bool IsValidChunkExt(std::string_view rest);

}  // namespace gearbox::http
