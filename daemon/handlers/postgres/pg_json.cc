#include "daemon/handlers/postgres/pg_json.h"

#include <cstring>

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

// Whether text holds a byte rapidjson's writer escapes in a string: a
// control, '"' or '\\' (every other byte, UTF-8 sequences too, it copies as
// is). Eight bytes at a time, as the per-byte loop cost more than the
// writing it saves: a word has a byte below n when
// (x - ones * n) & ~x & highs is not zero (exact for n <= 128: without such
// a byte no subtraction borrows, and a byte of x - n with its high bit set
// comes from one of x that has it set too).
bool NeedsEscape(const char* text, size_t length) {
  constexpr uint64_t kOnes = 0x0101010101010101;
  constexpr uint64_t kHighs = 0x8080808080808080;
  size_t i = 0;
  for (; i + 8 <= length; i += 8) {
    uint64_t x;
    memcpy(&x, text + i, sizeof x);
    const uint64_t quote = x ^ (kOnes * '"');       // '"' bytes now zero
    const uint64_t backslash = x ^ (kOnes * '\\');  // '\\' bytes now zero
    const uint64_t below = ((x - kOnes * 0x20) & ~x) |
                           ((quote - kOnes) & ~quote) |
                           ((backslash - kOnes) & ~backslash);
    if (below & kHighs) return true;
  }
  for (; i < length; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == '"' || c == '\\') return true;
  }
  return false;
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

void RowWriter::Writer::Text(const char* text, size_t length) {
  if (NeedsEscape(text, length)) {
    String(text, static_cast<rapidjson::SizeType>(length));
    return;
  }
  Prefix(rapidjson::kStringType);
  os_->Put('"');
  os_->Append(text, length);
  os_->Put('"');
  EndValue(true);
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
  // Single-row mode's closing result has none: nothing to write or flush.
  if (nrows == 0) return;
  const int ncols = PQnfields(result);
  for (int r = 0; r < nrows; ++r) {
    writer_.StartObject();
    for (int c = 0; c < ncols; ++c) {
      const char* name = PQfname(result, c);
      writer_.Text(name, strlen(name));
      // libpq gives NULL a length of 0: only an empty value may be one.
      const auto length = static_cast<size_t>(PQgetlength(result, r, c));
      if (length == 0 && PQgetisnull(result, r, c)) {
        writer_.Null();
        continue;
      }
      const char* value = PQgetvalue(result, r, c);
      // A switch on the column's type OID per value: cheaper than keeping
      // the kinds, which would cost an allocation per result set.
      const Kind kind = KindOf(PQftype(result, c));
      if (kind == Kind::kBool) {
        writer_.Bool(value[0] == 't');
      } else if (kind == Kind::kNumber && IsJsonNumber(value)) {
        writer_.Raw(value, length, rapidjson::kNumberType);
      } else {
        writer_.Text(value, length);
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
