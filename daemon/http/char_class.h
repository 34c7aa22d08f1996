// The character classes the request-head checks test on every byte of every
// request (RFC 9110 5.6.2 tchar, RFC 3986 path and reg-name bytes, field-value
// controls), answered by one lookup in a 256-entry table instead of a chain
// of comparisons. The table is built at compile time from the branchy
// definitions below (ascii.h's classes and these sets), so those stay the one
// source; tests/unit/daemon/http_char_class_test.cc holds the table to an
// independent spelling of the RFC sets for all 256 bytes.
#pragma once

#include <array>
#include <cstdint>

namespace gearbox::http::chars {

enum Class : uint8_t {
  kTchar = 1 << 0,    // RFC 9110 5.6.2 tchar
  kRegName = 1 << 1,  // RFC 3986 unreserved / sub-delims (reg-name, no '%')
  kPath = 1 << 2,     // a path or query byte other than '%' (IsPathByte)
  kControl = 1 << 3,  // a C0 control other than HTAB, or DEL
  kVisible = 1 << 4,  // VCHAR: %x21-7E
};

namespace def {

constexpr bool IsAlpha(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
constexpr bool In(unsigned char c, const char* set) {
  for (; *set != '\0'; ++set) {
    if (static_cast<unsigned char>(*set) == c) return true;
  }
  return false;
}
constexpr bool IsTchar(unsigned char c) {
  return IsAlpha(c) || IsDigit(c) || In(c, "!#$%&'*+-.^_`|~");
}
// RFC 3986 2.3 unreserved, 2.2 sub-delims.
constexpr bool IsRegName(unsigned char c) {
  return IsAlpha(c) || IsDigit(c) || In(c, "-._~") || In(c, "!$&'()*+,;=");
}
// pchar, "/" and "?" (RFC 3986 3.3, 3.4), plus the bytes browsers send
// unencoded (request_target.cc says why they are accepted).
constexpr bool IsPath(unsigned char c) {
  return IsRegName(c) || In(c, ":@/?") || In(c, "[\\]^`{|}");
}
constexpr bool IsControl(unsigned char c) {
  return (c < 0x20 && c != '\t') || c == 0x7f;
}
constexpr bool IsVisible(unsigned char c) { return c > 0x20 && c < 0x7f; }

constexpr std::array<uint8_t, 256> BuildTable() {
  std::array<uint8_t, 256> t{};
  for (int i = 0; i < 256; ++i) {
    const auto c = static_cast<unsigned char>(i);
    t[i] = static_cast<uint8_t>(
        (IsTchar(c) ? kTchar : 0) | (IsRegName(c) ? kRegName : 0) |
        (IsPath(c) ? kPath : 0) | (IsControl(c) ? kControl : 0) |
        (IsVisible(c) ? kVisible : 0));
  }
  return t;
}

}  // namespace def

inline constexpr std::array<uint8_t, 256> kTable = def::BuildTable();

constexpr bool Is(char c, Class cls) {
  return (kTable[static_cast<unsigned char>(c)] & cls) != 0;
}

}  // namespace gearbox::http::chars
