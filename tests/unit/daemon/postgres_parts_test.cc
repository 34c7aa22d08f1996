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
#include "daemon/handlers/postgres/pg_json.h"

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

}  // namespace
}  // namespace gearbox::postgres
