// The head checks' fast paths against plain definitions: the character table
// (daemon/http/char_class.h) for all 256 bytes, against the RFC sets spelled
// out here independently, and the 16-at-a-time CR/LF search
// (daemon/http/line_reader.h) against a byte loop for every position, buffer
// length and start; EqualsNoCase against strncasecmp (C locale) for every
// pair of bytes; IsValidHost's one-pass reg-name scan against the split it
// replaced, for every short string over the bytes that matter.
#include <gtest/gtest.h>
#include <strings.h>

#include <cctype>
#include <cstring>
#include <functional>
#include <string>

#include "daemon/http/char_class.h"
#include "daemon/http/http_syntax.h"
#include "daemon/http/line_reader.h"

namespace gearbox::http {
namespace {

const char kAlnum[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

bool InSet(int c, const std::string& set) {
  return c != 0 && std::memchr(set.data(), c, set.size()) != nullptr;
}

// RFC 9110 5.6.2.
bool RfcTchar(int c) {
  return InSet(c, std::string(kAlnum) + "!#$%&'*+-.^_`|~");
}
// RFC 3986 2.3 unreserved, 2.2 sub-delims.
bool RfcRegName(int c) {
  return InSet(c, std::string(kAlnum) + "-._~" + "!$&'()*+,;=");
}
// RFC 3986 3.3 pchar without pct-encoded, "/", "?" (3.4), and the bytes
// browsers leave unencoded that gearbox accepts.
bool RfcPath(int c) { return RfcRegName(c) || InSet(c, ":@/?[\\]^`{|}"); }
// RFC 5234 CTL, less HTAB (RFC 9110 5.5 allows it in a value).
bool RfcControl(int c) { return (c <= 0x1f && c != 0x09) || c == 0x7f; }
// RFC 5234 VCHAR.
bool RfcVisible(int c) { return c >= 0x21 && c <= 0x7e; }

TEST(HttpCharClassTest, TableAgreesWithTheRfcSetsForEveryByte) {
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    EXPECT_EQ(chars::Is(ch, chars::kTchar), RfcTchar(c)) << c;
    EXPECT_EQ(chars::Is(ch, chars::kRegName), RfcRegName(c)) << c;
    EXPECT_EQ(chars::Is(ch, chars::kPath), RfcPath(c)) << c;
    EXPECT_EQ(chars::Is(ch, chars::kControl), RfcControl(c)) << c;
    EXPECT_EQ(chars::Is(ch, chars::kVisible), RfcVisible(c)) << c;
    EXPECT_EQ(IsTchar(static_cast<unsigned char>(c)), RfcTchar(c)) << c;
  }
}

size_t SlowFindCrOrLf(std::string_view buf, size_t from) {
  size_t i = from;
  while (i < buf.size() && buf[i] != '\r' && buf[i] != '\n') ++i;
  return i;
}

TEST(HttpCharClassTest, FindCrOrLfAgreesWithAByteLoop) {
  // Every length up to a few blocks, every start, a CR or LF (or neither) at
  // every position, and a second one later: the first must win.
  for (size_t n = 0; n <= 50; ++n) {
    for (size_t at = 0; at <= n; ++at) {
      for (char mark : {'\r', '\n'}) {
        std::string buf(n, 'x');
        if (at < n) buf[at] = mark;
        if (at + 5 < n) buf[at + 5] = mark == '\r' ? '\n' : '\r';
        for (size_t from = 0; from <= n; ++from) {
          ASSERT_EQ(FindCrOrLf(buf, from), SlowFindCrOrLf(buf, from))
              << "n=" << n << " at=" << at << " from=" << from;
        }
      }
    }
  }
  // Bytes that differ from CR or LF in one bit, or only as signed values.
  std::string near = "\x0c\x0e\x0b\x8d\x8a\x2d\x2a\xff" + std::string(20, 'y');
  EXPECT_EQ(FindCrOrLf(near, 0), near.size());
}

TEST(HttpCharClassTest, EqualsNoCaseAgreesWithStrncasecmp) {
  for (int x = 0; x < 256; ++x) {
    for (int y = 0; y < 256; ++y) {
      const char a[] = {static_cast<char>(x), 'k'};
      const char b[] = {static_cast<char>(y), 'K'};
      const bool want = strncasecmp(a, b, 2) == 0;
      ASSERT_EQ(EqualsNoCase({a, 2}, {b, 2}), want) << x << " " << y;
    }
  }
  EXPECT_FALSE(EqualsNoCase("host", "hos"));
  EXPECT_TRUE(EqualsNoCase("Transfer-Encoding", "transfer-encoding"));
}

// IsValidHost for a value without '[' as it was written before the one-pass
// scan: split at the first ':', then reg-name and port.
bool SplitHostReference(std::string_view host) {
  auto reg_name = [](std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
      const int c = static_cast<unsigned char>(s[i]);
      if (c == '%') {
        if (i + 2 >= s.size() || !isxdigit(s[i + 1]) || !isxdigit(s[i + 2])) {
          return false;
        }
        i += 2;
      } else if (!RfcRegName(c)) {
        return false;
      }
    }
    return true;
  };
  auto port = [](std::string_view s) {
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  };
  const size_t colon = host.find(':');
  if (colon == std::string_view::npos) return reg_name(host);
  return reg_name(host.substr(0, colon)) && port(host.substr(colon + 1));
}

TEST(HttpCharClassTest, IsValidHostAgreesWithSplittingAtTheColon) {
  const std::string alphabet = "a1F%:.-@ /g";
  std::string host;
  int checked = 0;
  std::function<void(size_t)> all = [&](size_t left) {
    if (!host.empty() && host[0] != '[') {
      ASSERT_EQ(IsValidHost(host), SplitHostReference(host)) << host;
      ++checked;
    }
    if (left == 0) return;
    for (char c : alphabet) {
      host.push_back(c);
      all(left - 1);
      host.pop_back();
    }
  };
  all(5);
  EXPECT_GT(checked, 100000);
}

}  // namespace
}  // namespace gearbox::http
