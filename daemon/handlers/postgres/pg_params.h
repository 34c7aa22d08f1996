// A query's $1..$N values as libpq takes them (text format, each read up to
// its first NUL), kept in one buffer: a short value list costs no
// allocation (the string's inline room), a long one a single one, where a
// vector of strings cost one for the vector and one per long value.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace gearbox::postgres {

class PgParams {
 public:
  // Appends a value. A value with a NUL in it is cut there: libpq would send
  // only what comes before it anyway (it takes a text value's length from
  // strlen), so the server sees the same value as before.
  void Add(std::string_view value) {
    AddWith([value](std::string& out) { out.append(value); });
  }
  // Appends the value `append(std::string& buffer)` writes at the buffer's
  // end (decoding in place: no temporary string per value).
  template <typename Fn>
  void AddWith(Fn&& append) {
    const size_t start = buffer_.size();
    append(buffer_);
    const size_t nul = buffer_.find('\0', start);
    if (nul != std::string::npos) buffer_.resize(nul);
    buffer_.push_back('\0');
    ++count_;
  }
  int count() const { return count_; }
  // The values back to back, each ended by a NUL.
  const std::string& buffer() const { return buffer_; }

 private:
  std::string buffer_;
  int count_ = 0;
};

// Pointers to each of params' values, as libpq's paramValues wants them;
// params must outlive this. Up to kInline of them live on the stack (no
// allocation per query).
class ParamPointers {
 public:
  explicit ParamPointers(const PgParams& params) {
    const size_t n = static_cast<size_t>(params.count());
    const char** out = inline_;
    if (n > kInline) {
      heap_.resize(n);
      out = heap_.data();
    }
    const char* p = params.buffer().data();
    for (size_t i = 0; i < n; ++i) {
      out[i] = p;
      p += strlen(p) + 1;  // no value holds a NUL: its end is its own
    }
    data_ = out;
  }
  ParamPointers(const ParamPointers&) = delete;
  ParamPointers& operator=(const ParamPointers&) = delete;
  const char* const* data() const { return data_; }

 private:
  static constexpr size_t kInline = 16;
  const char* inline_[kInline];
  std::vector<const char*> heap_;
  const char* const* data_ = nullptr;
};

}  // namespace gearbox::postgres
