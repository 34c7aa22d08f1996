#include "daemon/handlers/postgres/pg_json.h"

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

// PostgreSQL's text form of a number is a JSON number, except NaN and
// +-Infinity (float, numeric): those stay strings, as JSON has no such
// numbers.
bool IsJsonNumber(const char* text) {
  const char* p = text[0] == '-' ? text + 1 : text;
  return *p >= '0' && *p <= '9';
}

// A point lookup's body fits: `[{"id":54321,"v":"..."}]`.
constexpr size_t kFirstBody = 256;

}  // namespace

RowWriter::Kind RowWriter::KindOf(Oid type) const {
  switch (type) {
    case kInt2Oid:
    case kInt4Oid:
    case kFloat4Oid:
    case kFloat8Oid:
      return Kind::kNumber;
    case kInt8Oid:
    case kNumericOid:
      return options_.big_numbers_as_strings ? Kind::kText : Kind::kNumber;
    case kBoolOid:
      return Kind::kBool;
    default:
      return Kind::kText;
  }
}

void RowWriter::Begin(std::string* out, JsonOptions options) {
  out->clear();
  // One allocation for a short result, instead of the string doubling from
  // its inline 15 characters.
  out->reserve(kFirstBody);
  sink_.out = out;
  sink_.n = 0;
  options_ = options;
  rows_ = 0;
  writer_.Reset(sink_);
  writer_.StartArray();
}

void RowWriter::Add(const PGresult* result) {
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_TUPLES_OK && status != PGRES_SINGLE_TUPLE) return;
  const int nrows = PQntuples(result);
  const int ncols = PQnfields(result);
  for (int r = 0; r < nrows; ++r) {
    writer_.StartObject();
    for (int c = 0; c < ncols; ++c) {
      writer_.Key(PQfname(result, c));
      if (PQgetisnull(result, r, c)) {
        writer_.Null();
        continue;
      }
      const char* value = PQgetvalue(result, r, c);
      const auto length =
          static_cast<rapidjson::SizeType>(PQgetlength(result, r, c));
      // A switch on the column's type OID per value: cheaper than keeping
      // the kinds, which would cost an allocation per result set.
      const Kind kind = KindOf(PQftype(result, c));
      if (kind == Kind::kBool) {
        writer_.Bool(value[0] == 't');
      } else if (kind == Kind::kNumber && IsJsonNumber(value)) {
        writer_.RawValue(value, length, rapidjson::kNumberType);
      } else {
        writer_.String(value, length);
      }
    }
    writer_.EndObject();
  }
  rows_ += nrows;
  sink_.Flush();
}

void RowWriter::End() {
  writer_.EndArray();
  sink_.Flush();
}

void RowsToJson(const PGresult* result, std::string& out, JsonOptions options) {
  RowWriter writer;
  writer.Begin(&out, options);
  writer.Add(result);
  writer.End();
}

}  // namespace gearbox::postgres
