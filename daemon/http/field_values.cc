// List-valued fields (Transfer-Encoding, Connection, Expect: RFC 9110 5.6.1)
// and chunk extensions (RFC 9112 7.1.1).
#include "daemon/http/ascii.h"
#include "daemon/http/http_syntax.h"

namespace gearbox::http {

using ascii::IsControl;
using ascii::IsWs;

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
          if (IsControl(q)) return false;
          ++j;
        } else if (IsControl(c)) {
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
