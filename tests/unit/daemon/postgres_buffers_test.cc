// What the postgres path keeps per request instead of allocating: the
// parameter buffer (PgParams, ParamPointers), the exchanges' kept blocks
// (BlockCache, PgExchange::Make) and the row writer's whole-run text, which
// must write exactly what rapidjson's own escaping writes.
#include <gtest/gtest.h>
#include <postgresql/libpq-fe.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <sanitizer/asan_interface.h>

#include <cstring>
#include <string>
#include <vector>

#include "daemon/handlers/postgres/block_cache.h"
#include "daemon/handlers/postgres/pg_exchange.h"
#include "daemon/handlers/postgres/pg_json.h"
#include "daemon/handlers/postgres/pg_params.h"
#include "daemon/handlers/postgres/pg_pool.h"

namespace gearbox::postgres {
namespace {

TEST(PgParamsTest, PointsAtEveryValueFewOrMany) {
  for (int n : {0, 1, 16, 17, 40}) {
    PgParams params;
    std::vector<std::string> values;
    for (int i = 0; i < n; ++i) {
      // Empty values among them: each still has a pointer of its own.
      values.push_back(i % 3 ? "v" + std::to_string(i) : "");
      params.Add(values.back());
    }
    ASSERT_EQ(params.count(), n);
    const ParamPointers pointers(params);
    for (int i = 0; i < n; ++i) {
      EXPECT_STREQ(pointers.data()[i], values[i].c_str()) << n << " " << i;
    }
  }
}

TEST(PgParamsTest, AValueIsCutAtItsFirstNul) {
  // libpq reads a text value up to its first NUL: the value sent is what
  // comes before it, and the values after it are still their own.
  PgParams params;
  params.Add(std::string_view("12\0abc", 6));
  params.AddWith([](std::string& out) { out.append("x\0\0y", 4); });
  params.Add("last");
  const ParamPointers pointers(params);
  EXPECT_STREQ(pointers.data()[0], "12");
  EXPECT_STREQ(pointers.data()[1], "x");
  EXPECT_STREQ(pointers.data()[2], "last");
  EXPECT_EQ(params.buffer(), std::string("12\0x\0last\0", 10));
}

TEST(PgParamsTest, LongValuesAndAppendsInPlace) {
  PgParams params;
  const std::string long_value(1000, 'z');
  params.Add(long_value);
  params.AddWith([](std::string& out) {
    for (char c : std::string("a+b")) out += c == '+' ? ' ' : c;
  });
  const ParamPointers pointers(params);
  EXPECT_EQ(std::string(pointers.data()[0]), long_value);
  EXPECT_STREQ(pointers.data()[1], "a b");
}

TEST(BlockCacheTest, ReusesBlocksAndKeepsAtMostItsCapacity) {
  BlockCache cache(2);
  void* a = cache.Take(64);
  void* b = cache.Take(64);
  void* c = cache.Take(64);
  cache.Give(a, 64);
  cache.Give(b, 64);
  EXPECT_EQ(cache.kept(), 2u);
  cache.Give(c, 64);  // no room: freed (LeakSanitizer sees a leak otherwise)
  EXPECT_EQ(cache.kept(), 2u);
#if defined(__SANITIZE_ADDRESS__)
  // A kept block is poisoned: a use after its object's end is reported.
  EXPECT_TRUE(__asan_address_is_poisoned(b));
#endif
  // Last in, first out: the block most recently given back is warm.
  EXPECT_EQ(cache.Take(64), b);
#if defined(__SANITIZE_ADDRESS__)
  EXPECT_FALSE(__asan_address_is_poisoned(b));
#endif
  EXPECT_EQ(cache.Take(64), a);
  EXPECT_EQ(cache.kept(), 0u);
  cache.Give(a, 64);
  // Another size is never handed a kept block, nor kept beside them.
  void* d = cache.Take(128);
  EXPECT_NE(d, a);
  cache.Give(d, 128);
  EXPECT_EQ(cache.kept(), 1u);
  cache.Give(b, 64);
  EXPECT_EQ(cache.kept(), 2u);
  // The cache's end frees what it keeps (LeakSanitizer checks).
}

TEST(BlockCacheTest, PgExchangesLiveInTheirPoolsBlocks) {
  PgPool pool("host=/nonexistent", "host=/nonexistent", "/t", 1, nullptr);
  PgRoute route;
  std::unique_ptr<Exchange> first = PgExchange::Make(&pool, &route, {});
  EXPECT_EQ(pool.exchange_blocks().kept(), 0u);
  const void* where = first.get();
  first.reset();
  EXPECT_EQ(pool.exchange_blocks().kept(), 1u);
  std::unique_ptr<Exchange> second = PgExchange::Make(&pool, &route, {});
  EXPECT_EQ(second.get(), where);
  EXPECT_EQ(pool.exchange_blocks().kept(), 0u);
  // More alive at once than the pool keeps: the extra ones are freed.
  std::vector<std::unique_ptr<Exchange>> many;
  for (size_t i = 0; i < PgPool::kKeptExchanges + 5; ++i) {
    many.push_back(PgExchange::Make(&pool, &route, {}));
  }
  many.clear();
  second.reset();
  EXPECT_EQ(pool.exchange_blocks().kept(), PgPool::kKeptExchanges);
}

// A one-column text result holding `value`.
PGresult* TextResult(const std::string& value) {
  PGresult* result = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  PGresAttDesc attr = {};
  attr.name = const_cast<char*>("t");
  attr.typid = 25;
  attr.typlen = -1;
  attr.atttypmod = -1;
  EXPECT_TRUE(PQsetResultAttrs(result, 1, &attr));
  EXPECT_TRUE(PQsetvalue(result, 0, 0, const_cast<char*>(value.data()),
                         static_cast<int>(value.size())));
  return result;
}

// What rapidjson's own writer makes of the same row.
std::string Reference(const std::string& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartArray();
  writer.StartObject();
  writer.Key("t");
  writer.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
  writer.EndObject();
  writer.EndArray();
  return buffer.GetString();
}

std::string Written(const std::string& value) {
  PGresult* result = TextResult(value);
  std::string out;
  RowsToJson(result, out);
  PQclear(result);
  return out;
}

TEST(RowWriterTest, TextIsWhatRapidjsonWritesForEveryByteAnywhere) {
  // Every byte value (but NUL, which a text value never holds) at every
  // place of strings shorter and longer than a word, among plain ASCII and
  // among high bytes (a word's borrow must not hide nor invent an escape).
  for (char filler : {'a', '\x7f', '\x80', '\xff', '!', '#', '['}) {
    for (size_t length : {1, 7, 8, 9, 16, 23}) {
      for (size_t at = 0; at < length; ++at) {
        for (int byte = 1; byte < 256; ++byte) {
          std::string value(length, filler);
          value[at] = static_cast<char>(byte);
          ASSERT_EQ(Written(value), Reference(value))
              << "byte " << byte << " at " << at << " of " << length;
        }
      }
    }
  }
}

TEST(RowWriterTest, LongTextPassesTheSinksBufferWhole) {
  // Longer than the sink's buffer, plain and escaped, after some output.
  for (size_t length : {255, 256, 257, 5000}) {
    std::string plain(length, 'p');
    plain[length / 2] = '\xc3';  // UTF-8 is copied as is
    EXPECT_EQ(Written(plain), Reference(plain)) << length;
    std::string escaped = plain;
    escaped[length - 1] = '\n';
    EXPECT_EQ(Written(escaped), Reference(escaped)) << length;
  }
}

TEST(RowWriterTest, EmptyIsNotNullAndAnEmptyResultWritesNothing) {
  // NULL and '' both have length 0 in libpq: only isnull tells them apart.
  PGresult* result = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  PGresAttDesc attrs[2] = {};
  attrs[0].name = const_cast<char*>("e");
  attrs[1].name = const_cast<char*>("n");
  for (PGresAttDesc& a : attrs) {
    a.typid = 25;
    a.typlen = -1;
    a.atttypmod = -1;
  }
  ASSERT_TRUE(PQsetResultAttrs(result, 2, attrs));
  ASSERT_TRUE(PQsetvalue(result, 0, 0, const_cast<char*>(""), 0));
  ASSERT_TRUE(PQsetvalue(result, 0, 1, nullptr, -1));
  std::string out;
  RowWriter writer;
  writer.Begin(&out, {});
  writer.Add(result);
  PQclear(result);
  EXPECT_EQ(out, "[{\"e\":\"\",\"n\":null}");
  PGresult* none = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  writer.Add(none);
  PQclear(none);
  EXPECT_EQ(out, "[{\"e\":\"\",\"n\":null}");
  writer.End();
  EXPECT_EQ(out, "[{\"e\":\"\",\"n\":null}]");
}

}  // namespace
}  // namespace gearbox::postgres
