// ASCII character classes of RFC 5234 (ALPHA, DIGIT, HEXDIG, WSP, VCHAR),
// shared by the HTTP grammar's files; inline, as every byte of a head goes
// through them.
#pragma once

#include "daemon/http/char_class.h"

namespace gearbox::http::ascii {

inline bool IsAlpha(unsigned char c) {
  return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
}
inline bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
inline bool IsHex(unsigned char c) {
  return IsDigit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}
inline bool IsWs(unsigned char c) { return c == ' ' || c == '\t'; }
inline bool IsVisible(unsigned char c) {
  return chars::Is(static_cast<char>(c), chars::kVisible);
}
// A C0 control other than HTAB, or DEL: never in a field value (RFC 9110 5.5).
inline bool IsControl(unsigned char c) {
  return chars::Is(static_cast<char>(c), chars::kControl);
}

}  // namespace gearbox::http::ascii
