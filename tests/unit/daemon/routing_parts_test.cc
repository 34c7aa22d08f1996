// The router's parts on their own: LiteralTable (its hash is one-to-one for
// short keys, so Find compares no bytes there) and CanonicalPath's quick
// check (eight bytes at a time), which must never call a path canonical that
// is not.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "daemon/routing/literal_table.h"
#include "daemon/routing/route_path.h"

namespace gearbox {
namespace {

TEST(LiteralTableTest, FindsWhatWasSetAndNothingElse) {
  LiteralTable table;
  EXPECT_EQ(table.Find("x"), LiteralTable::kNone);  // empty: no slots
  table.Set("hello", 1);
  table.Set("", 2);
  table.Set("a-key-longer-than-eight-bytes", 3);
  EXPECT_EQ(table.Find("hello"), 1u);
  EXPECT_EQ(table.Find(""), 2u);
  EXPECT_EQ(table.Find("a-key-longer-than-eight-bytes"), 3u);
  EXPECT_EQ(table.Find("hellp"), LiteralTable::kNone);
  EXPECT_EQ(table.Find("hell"), LiteralTable::kNone);
  EXPECT_EQ(table.Find("a-key-longer-than-eight-byteS"), LiteralTable::kNone);
  table.Set("hello", 7);  // replaces
  EXPECT_EQ(table.Find("hello"), 7u);
  EXPECT_EQ(table.size(), 3u);
}

// Every key of one or two bytes, half of them set: a short key is found by
// its hash and length alone, so two short keys with one hash would show here
// as a wrong value or a false hit.
TEST(LiteralTableTest, ShortKeysNeverCollide) {
  LiteralTable table;
  std::vector<std::string> keys;
  for (int a = 0; a < 256; ++a) {
    keys.push_back(std::string(1, static_cast<char>(a)));
    for (int b = 0; b < 256; ++b) {
      keys.push_back({static_cast<char>(a), static_cast<char>(b)});
    }
  }
  for (size_t i = 0; i < keys.size(); i += 2) {
    table.Set(keys[i], static_cast<uint32_t>(i));
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint32_t want = i % 2 ? LiteralTable::kNone : i;
    ASSERT_EQ(table.Find(keys[i]), want) << i;
  }
}

// Keys of 3 to 24 bytes that differ in one byte, at every position: the
// loads of a short key overlap, a long key's last word overlaps the one
// before it, and none of that may lose a byte.
TEST(LiteralTableTest, EveryByteOfAKeyCounts) {
  std::mt19937 random(7);
  for (size_t n = 3; n <= 24; ++n) {
    LiteralTable table;
    std::map<std::string, uint32_t> want;
    std::string base(n, 'a');
    for (size_t at = 0; at < n; ++at) {
      for (char c : {'b', 'c', '/', '\0', '\xff'}) {
        std::string key = base;
        key[at] = c;
        if (random() % 2) {
          const uint32_t value = static_cast<uint32_t>(want.size());
          table.Set(key, value);
          want[key] = value;
        }
      }
    }
    for (size_t at = 0; at < n; ++at) {
      for (char c : {'b', 'c', '/', '\0', '\xff'}) {
        std::string key = base;
        key[at] = c;
        auto it = want.find(key);
        ASSERT_EQ(table.Find(key),
                  it == want.end() ? LiteralTable::kNone : it->second)
            << n << " " << at;
      }
    }
  }
}

std::string Canonical(std::string_view raw) {
  std::string scratch;
  const RoutePath path = CanonicalPath(raw, scratch);
  return path.ok ? std::string(path.path) : "(refused)";
}

// A clean path of every length, with something to canonicalise put at every
// offset (so across every word boundary of the quick check): it is
// canonicalised exactly as before the quick check existed.
TEST(CanonicalPathTest, QuickCheckMissesNothing) {
  const std::string letters = "/abcdefghijklmnopqrstuvwxyz";
  for (size_t n = 1; n <= letters.size(); ++n) {
    const std::string clean = letters.substr(0, n);
    std::string scratch;
    const RoutePath same = CanonicalPath(clean, scratch);
    EXPECT_TRUE(same.ok);
    EXPECT_EQ(same.path.data(), clean.data()) << clean;  // no copy
    for (size_t at = 1; at <= n; ++at) {
      const std::string head = clean.substr(0, at);
      const std::string tail = clean.substr(at);
      const std::string slashed = head.back() == '/' ? head : head + "/";
      const std::string rest = tail.empty() ? "x" : tail;
      // "//" merges, "/./" and "/y/../" go, an escape is decoded.
      EXPECT_EQ(Canonical(slashed + "/" + rest), slashed + rest);
      EXPECT_EQ(Canonical(slashed + "./" + rest), slashed + rest);
      EXPECT_EQ(Canonical(slashed + "y/../" + rest), slashed + rest);
      EXPECT_EQ(Canonical(head + "%41" + tail), head + "A" + tail);
      EXPECT_EQ(Canonical(head + "%2f" + tail), head + "%2F" + tail);
      EXPECT_EQ(Canonical(head + "%zz" + tail), "(refused)");
      EXPECT_EQ(Canonical(slashed + ".."), slashed == "/" ? "(refused)" : "/");
    }
  }
}

// What the quick check turns away but is canonical comes back unchanged.
TEST(CanonicalPathTest, LookalikesStayAsTheyAre) {
  for (std::string_view raw :
       {"/a..b", "/a./b", "/.well-known/x", "/x/..y", "/abcdefg/.h",
        "/abcdefgh/..i/", "/a/", "/", "/ab", "/abc/"}) {
    std::string scratch;
    const RoutePath path = CanonicalPath(raw, scratch);
    EXPECT_TRUE(path.ok) << raw;
    EXPECT_EQ(path.path, raw);
    EXPECT_EQ(path.path.data(), raw.data()) << raw;
  }
  EXPECT_EQ(Canonical("/abcdefg/."), "/abcdefg/");
  EXPECT_EQ(Canonical("/abcdefg//"), "/abcdefg/");
  EXPECT_EQ(Canonical("/abcdefgh/.."), "/");
}

}  // namespace
}  // namespace gearbox
