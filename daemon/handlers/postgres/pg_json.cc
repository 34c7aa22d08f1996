#include "daemon/handlers/postgres/pg_json.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstring>
#include <vector>

namespace gearbox::postgres {
namespace {

// Type OIDs from PostgreSQL's catalog (src/include/catalog/pg_type.dat);
// stable across versions, and libpq does not export them.
constexpr Oid kBoolOid = 16;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kFloat4Oid = 700;
constexpr Oid kFloat8Oid = 701;
constexpr Oid kNumericOid = 1700;

enum class Kind { kNumber, kBool, kText };

Kind KindOf(Oid type) {
  switch (type) {
    case kInt2Oid:
    case kInt4Oid:
    case kInt8Oid:
    case kFloat4Oid:
    case kFloat8Oid:
    case kNumericOid:
      return Kind::kNumber;
    case kBoolOid:
      return Kind::kBool;
    default:
      return Kind::kText;
  }
}

// PostgreSQL's text form of a number is a JSON number, except NaN and
// +-Infinity (float, numeric): those stay strings, as JSON has no such
// numbers.
bool IsJsonNumber(const char* text) {
  const char* p = text[0] == '-' ? text + 1 : text;
  return *p >= '0' && *p <= '9';
}

}  // namespace

void RowsToJson(const PGresult* result, std::string& out) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartArray();
  const bool rows = PQresultStatus(result) == PGRES_TUPLES_OK;
  const int nrows = rows ? PQntuples(result) : 0;
  const int ncols = rows ? PQnfields(result) : 0;
  std::vector<Kind> kinds(ncols);
  for (int c = 0; c < ncols; ++c) kinds[c] = KindOf(PQftype(result, c));
  for (int r = 0; r < nrows; ++r) {
    writer.StartObject();
    for (int c = 0; c < ncols; ++c) {
      writer.Key(PQfname(result, c));
      if (PQgetisnull(result, r, c)) {
        writer.Null();
        continue;
      }
      const char* value = PQgetvalue(result, r, c);
      const auto length =
          static_cast<rapidjson::SizeType>(PQgetlength(result, r, c));
      if (kinds[c] == Kind::kBool) {
        writer.Bool(value[0] == 't');
      } else if (kinds[c] == Kind::kNumber && IsJsonNumber(value)) {
        writer.RawValue(value, length, rapidjson::kNumberType);
      } else {
        writer.String(value, length);
      }
    }
    writer.EndObject();
  }
  writer.EndArray();
  out.assign(buffer.GetString(), buffer.GetSize());
}

}  // namespace gearbox::postgres
