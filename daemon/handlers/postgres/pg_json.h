// A query's rows as the response body: a JSON array of objects, one per row,
// keyed by column name. int2/int4/float4/float8 are JSON numbers, int8 and
// numeric too unless the route asks for strings (a JSON number above 2^53
// loses digits in JavaScript), bool is true/false, NULL is null, everything
// else a JSON string.
#pragma once

#include <postgresql/libpq-fe.h>
#include <rapidjson/writer.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace gearbox::postgres {

struct JsonOptions {
  bool big_numbers_as_strings = false;  // int8 and numeric as "123"
};

// Writes rows into a string as they arrive (single-row mode hands them over
// one PGresult at a time), so a result is never held twice: Begin, Add for
// each result, End.
class RowWriter {
 public:
  RowWriter() = default;
  RowWriter(const RowWriter&) = delete;  // the writer points into it
  RowWriter& operator=(const RowWriter&) = delete;
  // Clears *out and opens the array; out must outlive the writing.
  void Begin(std::string* out, JsonOptions options);
  // Appends result's rows (a PGRES_SINGLE_TUPLE or PGRES_TUPLES_OK result;
  // any other adds none); *out holds them all when it returns.
  void Add(const PGresult* result);
  // Closes the array.
  void End();
  int64_t rows() const { return rows_; }

 private:
  // rapidjson's output stream concept over a std::string. Characters gather
  // in a small buffer appended in runs: a push_back per character was a call
  // per character (not inlined), a third of the writer's time.
  struct Sink {
    using Ch = char;
    std::string* out = nullptr;
    char buf[256];
    size_t n = 0;
    void Put(char c) {
      if (n == sizeof buf) Flush();
      buf[n++] = c;
    }
    // A run of characters at once.
    void Append(const char* s, size_t len) {
      if (len > sizeof buf - n) {
        Flush();
        if (len > sizeof buf) {
          out->append(s, len);
          return;
        }
      }
      memcpy(buf + n, s, len);
      n += len;
    }
    void Flush() {
      out->append(buf, n);
      n = 0;
    }
  };
  enum class Kind : uint8_t { kNumber, kBool, kText };
  Kind KindOf(Oid type) const;
  // The writer's nesting (an array of objects: two levels) lives in the
  // writer's own buffer: no allocation per result.
  using StackAllocator = rapidjson::MemoryPoolAllocator<>;
  static constexpr size_t kLevels = 4;
  using BaseWriter = rapidjson::Writer<Sink, rapidjson::UTF8<>,
                                       rapidjson::UTF8<>, StackAllocator>;
  // rapidjson's writer, with text that needs no escaping (nearly all of it)
  // and numbers appended as whole runs: rapidjson moves a string through
  // its escaping one character at a time.
  class Writer : public BaseWriter {
   public:
    using BaseWriter::BaseWriter;
    // A string (a value or a key), as String() writes it.
    void Text(const char* text, size_t length);
    // A value's JSON text as is, as RawValue() writes it.
    void Raw(const char* json, size_t length, rapidjson::Type type) {
      Prefix(type);
      os_->Append(json, length);
      EndValue(true);
    }
  };

  Sink sink_;
  alignas(std::max_align_t) char stack_buffer_[128];
  StackAllocator stack_allocator_{stack_buffer_, sizeof stack_buffer_};
  Writer writer_{&stack_allocator_, kLevels};
  JsonOptions options_;
  int64_t rows_ = 0;
};

// out = result's rows as a whole array (Begin, Add, End).
void RowsToJson(const PGresult* result, std::string& out,
                JsonOptions options = {});

}  // namespace gearbox::postgres
