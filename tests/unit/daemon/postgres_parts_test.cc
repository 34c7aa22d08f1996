// The postgres handler's parts that need no server: conninfo checks and
// redaction (libpq's own parser), and rows -> JSON over results built with
// libpq's result API. The handler against a real server is
// tests/system/postgres_test.sh.
#include <gtest/gtest.h>
#include <postgresql/libpq-fe.h>
#include <rapidjson/document.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "daemon/handlers/postgres/conninfo.h"
#include "daemon/handlers/postgres/pg_errors.h"
#include "daemon/handlers/postgres/pg_exchange.h"
#include "daemon/handlers/postgres/pg_json.h"
#include "daemon/handlers/postgres/pg_pace.h"
#include "daemon/handlers/postgres/route_params.h"

namespace gearbox::postgres {
namespace {

TEST(ConninfoTest, RedactsThePasswordInEveryForm) {
  EXPECT_EQ(RedactConninfo("host=/run/postgresql dbname=app password=s3cret"),
            "password=******** dbname=app host=/run/postgresql");
  const std::string quoted = RedactConninfo("password='a b\\'c' user=u");
  EXPECT_EQ(quoted.find("a b"), std::string::npos) << quoted;
  EXPECT_NE(quoted.find("password=********"), std::string::npos) << quoted;
  const std::string uri = RedactConninfo(
      "postgresql://gearbox:s3cret@db.example/app?sslmode=require");
  EXPECT_EQ(uri.find("s3cret"), std::string::npos) << uri;
  EXPECT_NE(uri.find("user=gearbox"), std::string::npos) << uri;
  EXPECT_NE(uri.find("password=********"), std::string::npos) << uri;
  // Values with spaces are quoted the way libpq reads them back.
  EXPECT_EQ(RedactConninfo("application_name='my app'"),
            "application_name='my app'");
  EXPECT_EQ(RedactConninfo(""), "");
  // Unparsable: nothing of it is shown (a password may be anywhere in it).
  EXPECT_EQ(RedactConninfo("password=s3cret host"), "<unparsable conninfo>");
}

TEST(ConninfoTest, CheckNamesWhatLibpqRejects) {
  EXPECT_EQ(CheckConninfo("host=/tmp dbname=x"), "");
  EXPECT_EQ(CheckConninfo(""), "");
  EXPECT_NE(CheckConninfo("nosuchkey=1").find("not a libpq conninfo: "),
            std::string::npos);
  EXPECT_NE(CheckConninfo("host").find("not a libpq conninfo"),
            std::string::npos);
  // libpq's message quotes the bad token: not when it may be a password's.
  const std::string withheld = CheckConninfo("password=a b");
  EXPECT_EQ(withheld.find("\"b\""), std::string::npos) << withheld;
  EXPECT_NE(withheld.find("withheld"), std::string::npos) << withheld;
  EXPECT_EQ(CheckQuery("SELECT 1"), "");
  EXPECT_EQ(CheckQuery("  \n"), "a postgres route needs a query");
}

// A PGRES_TUPLES_OK result with these columns (name, type oid) and rows of
// text values (nullptr: NULL).
PGresult* MakeResult(std::vector<std::pair<const char*, Oid>> columns,
                     std::vector<std::vector<const char*>> rows) {
  PGresult* result = PQmakeEmptyPGresult(nullptr, PGRES_TUPLES_OK);
  std::vector<PGresAttDesc> attrs(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    attrs[i] = {};
    attrs[i].name = const_cast<char*>(columns[i].first);
    attrs[i].typid = columns[i].second;
    attrs[i].typlen = -1;
    attrs[i].atttypmod = -1;
  }
  EXPECT_TRUE(
      PQsetResultAttrs(result, static_cast<int>(attrs.size()), attrs.data()));
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < rows[r].size(); ++c) {
      const char* v = rows[r][c];
      EXPECT_TRUE(PQsetvalue(result, static_cast<int>(r), static_cast<int>(c),
                             const_cast<char*>(v),
                             v ? static_cast<int>(strlen(v)) : -1));
    }
  }
  return result;
}

TEST(RowsToJsonTest, TypesAndEscaping) {
  PGresult* result =
      MakeResult({{"i2", 21},
                  {"i4", 23},
                  {"i8", 20},
                  {"f4", 700},
                  {"f8", 701},
                  {"num", 1700},
                  {"b", 16},
                  {"t", 25},
                  {"d", 1082},
                  {"j", 3802}},
                 {{"-2", "7", "9007199254740993", "1.5", "-1e+300",
                   "12345678901234567890.5", "t", "q\" \\ \n\t\x01 \xc3\xa9",
                   "2024-02-29", "{\"a\": 1}"},
                  {nullptr, nullptr, nullptr, "NaN", "-Infinity", "NaN", "f",
                   nullptr, nullptr, nullptr}});
  std::string out = "stale";
  RowsToJson(result, out);
  PQclear(result);
  EXPECT_EQ(out,
            "[{\"i2\":-2,\"i4\":7,\"i8\":9007199254740993,\"f4\":1.5,"
            "\"f8\":-1e+300,\"num\":12345678901234567890.5,\"b\":true,"
            "\"t\":\"q\\\" \\\\ \\n\\t\\u0001 \xc3\xa9\",\"d\":\"2024-02-29\","
            "\"j\":\"{\\\"a\\\": 1}\"},"
            "{\"i2\":null,\"i4\":null,\"i8\":null,\"f4\":\"NaN\","
            "\"f8\":\"-Infinity\",\"num\":\"NaN\",\"b\":false,\"t\":null,"
            "\"d\":null,\"j\":null}]");
  rapidjson::Document parsed;
  parsed.Parse(out.c_str());
  EXPECT_FALSE(parsed.HasParseError()) << out;
}

TEST(RowsToJsonTest, NoRowsAndCommandsAreAnEmptyArray) {
  PGresult* empty = MakeResult({{"n", 23}}, {});
  std::string out;
  RowsToJson(empty, out);
  PQclear(empty);
  EXPECT_EQ(out, "[]");
  PGresult* command = PQmakeEmptyPGresult(nullptr, PGRES_COMMAND_OK);
  RowsToJson(command, out);
  PQclear(command);
  EXPECT_EQ(out, "[]");
}

TEST(RowWriterTest, RowsArriveOneResultAtATime) {
  std::string out = "stale";
  RowWriter writer;
  writer.Begin(&out, {});
  for (const char* id : {"1", "2"}) {
    PGresult* row = MakeResult({{"id", 23}, {"big", 20}}, {{id, "-5"}});
    writer.Add(row);
    PQclear(row);
    // Every row is in `out` once Add returns: max_bytes reads its size.
    EXPECT_EQ(out.back(), '}') << out;
  }
  EXPECT_EQ(out, "[{\"id\":1,\"big\":-5},{\"id\":2,\"big\":-5}");
  PGresult* last = MakeResult({{"id", 23}, {"big", 20}}, {});
  writer.Add(last);  // single-row mode's closing result: no rows
  PQclear(last);
  writer.End();
  EXPECT_EQ(out, "[{\"id\":1,\"big\":-5},{\"id\":2,\"big\":-5}]");
  EXPECT_EQ(writer.rows(), 2);
}

TEST(RowWriterTest, WritesAgainAfterEndAndWideRows) {
  // The writer's nesting lives in its own buffer: a second Begin starts
  // clean, and a row of many columns nests no deeper.
  RowWriter writer;
  std::string first, second;
  writer.Begin(&first, {});
  PGresult* one = MakeResult({{"a", 23}}, {{"1"}});
  writer.Add(one);
  PQclear(one);
  writer.End();
  std::vector<std::string> names;
  std::vector<std::pair<const char*, Oid>> columns;
  std::vector<const char*> row;
  std::string expected = "[{";
  for (int c = 0; c < 40; ++c) names.push_back("c" + std::to_string(c));
  for (int c = 0; c < 40; ++c) {
    columns.emplace_back(names[c].c_str(), c % 2 ? 16 : 25);  // bool, text
    row.push_back(c % 2 ? "t" : "x");
    expected += (c ? ",\"c" : "\"c") + std::to_string(c) +
                "\":" + (c % 2 ? "true" : "\"x\"");
  }
  expected += "}]";
  writer.Begin(&second, {});
  PGresult* wide = MakeResult(columns, {row});
  writer.Add(wide);
  PQclear(wide);
  writer.End();
  EXPECT_EQ(first, "[{\"a\":1}]");
  EXPECT_EQ(second, expected);
  EXPECT_EQ(writer.rows(), 1);
}

TEST(PgPaceTest, SlowUntilAWindowIsIn) {
  PgPace pace;
  for (int i = 0; i + 1 < PgPace::kWindow; ++i) {
    pace.Sample(std::chrono::microseconds(40));
    EXPECT_FALSE(pace.quick()) << i;
  }
  pace.Sample(std::chrono::microseconds(40));
  EXPECT_TRUE(pace.quick());
}

TEST(PgPaceTest, TheFastestOfEachWindowDecides) {
  PgPace pace;
  // Answers read late (a busy worker) beside one read promptly: quick.
  for (int i = 0; i < PgPace::kWindow; ++i) {
    pace.Sample(i == 7 ? PgPace::kQuickBelow - std::chrono::microseconds(1)
                       : std::chrono::milliseconds(3));
  }
  EXPECT_TRUE(pace.quick());
  // A window where nothing is answered under the bound (pg_sleep(0.001)):
  // slow again, from that window's end on.
  for (int i = 0; i < PgPace::kWindow; ++i) {
    pace.Sample(PgPace::kQuickBelow + std::chrono::microseconds(600));
    EXPECT_EQ(pace.quick(), i + 1 < PgPace::kWindow) << i;
  }
  EXPECT_FALSE(pace.quick());
}

TEST(RowWriterTest, Int8AndNumericAsStrings) {
  PGresult* result =
      MakeResult({{"i4", 23}, {"i8", 20}, {"num", 1700}, {"f8", 701}},
                 {{"7", "9007199254740993", "12345678901234567890.5", "1.5"}});
  std::string out;
  RowsToJson(result, out, {.big_numbers_as_strings = true});
  PQclear(result);
  EXPECT_EQ(out,
            "[{\"i4\":7,\"i8\":\"9007199254740993\","
            "\"num\":\"12345678901234567890.5\",\"f8\":1.5}]");
}

TEST(SqlstateTest, EveryMappingOfTheTable) {
  struct Case {
    const char* sqlstate;
    int status;
    const char* category;
    bool retry;
  };
  const Case cases[] = {
      {"22P02", 400, "invalid parameter", false},
      {"22003", 400, "invalid parameter", false},
      {"23505", 409, "constraint violation", false},
      {"23503", 409, "constraint violation", false},
      {"40001", 409, "serialization failure", true},
      {"40P01", 409, "deadlock detected", true},
      {"40003", 502, "query failed", false},  // the class is not enough
      {"57014", 502, "query cancelled", false},
      {"57P01", 502, "query failed", false},
      {"42P01", 502, "query failed", false},
      {"", 502, "query failed", false},
  };
  for (const Case& c : cases) {
    const ErrorAnswer a = AnswerForSqlstate(c.sqlstate);
    EXPECT_EQ(a.status, c.status) << c.sqlstate;
    EXPECT_STREQ(a.category, c.category) << c.sqlstate;
    EXPECT_EQ(a.retry, c.retry) << c.sqlstate;
  }
}

TEST(SqlstateTest, BodyIsJsonWithSqlstateAndRetry) {
  Response response;
  Answer(response, AnswerForSqlstate("40P01"), "40P01");
  EXPECT_EQ(response.status, 409);
  EXPECT_EQ(response.content_type, "application/json");
  EXPECT_EQ(response.body,
            "{\"error\":\"deadlock detected\",\"sqlstate\":\"40P01\","
            "\"retry\":true}\n");
  Answer(response, kNoResources);
  EXPECT_EQ(response.status, 503);
  EXPECT_EQ(response.body, "{\"error\":\"server out of resources\"}\n");
  Answer(response, kPrepareFailed, "4\"P01");  // not a SQLSTATE: left out
  EXPECT_EQ(response.body, "{\"error\":\"statement cannot be prepared\"}\n");
}

TEST(SqlstateTest, OutOfDescriptorsReadsLibpqsMessage) {
  EXPECT_TRUE(OutOfDescriptors("could not create socket: Too many open files"));
  EXPECT_TRUE(OutOfDescriptors(
      "could not create socket: Too many open files in system"));
  EXPECT_FALSE(OutOfDescriptors(
      "connection to server on socket \"/x/.s.PGSQL.5432\" failed: No such "
      "file or directory"));
}

TEST(RouteParamsTest, ConnectTimeoutAndInt8) {
  EXPECT_EQ(CheckConnectTimeout("250ms"), "");
  EXPECT_EQ(ConnectTimeout("250ms"), std::chrono::milliseconds(250));
  EXPECT_NE(CheckConnectTimeout("0s"), "");
  EXPECT_NE(CheckConnectTimeout("soon"), "");
  EXPECT_EQ(CheckInt8("number"), "");
  EXPECT_EQ(CheckInt8("string"), "");
  EXPECT_NE(CheckInt8("text"), "");
  EXPECT_TRUE(Int8AsString("string"));
  EXPECT_FALSE(Int8AsString("number"));
}

}  // namespace
}  // namespace gearbox::postgres
