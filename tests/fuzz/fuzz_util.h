// Shared by the codec fuzz targets: feeding schedules and the "moving buffer".
//
// A codec sees every unconsumed byte on each call, and the caller's buffer may
// move between calls (gearbox::Buffer compacts and reallocs). The targets
// therefore hand each Parse() call a fresh heap copy of exactly the unconsumed
// bytes: a view kept past its call, or a read past the end, is a
// heap-use-after-free / heap-buffer-overflow under ASan instead of silently
// reading the old bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gearbox::fuzz {

// FNV-1a: the schedule is a pure function of the input, so every crash
// reproduces from its file alone.
inline uint64_t Hash(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 1099511628211ull;
  }
  return h;
}

// splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n ? static_cast<size_t>(Next() % n) : 0; }

 private:
  uint64_t state_;
};

enum class Split { kWhole, kRandom, kBytewise };

inline const char* SplitName(Split s) {
  switch (s) {
    case Split::kWhole:
      return "whole";
    case Split::kRandom:
      return "random";
    case Split::kBytewise:
      return "bytewise";
  }
  return "?";
}

// The sizes of the reads a connection would see for `size` bytes.
inline std::vector<size_t> Schedule(Split split, size_t size, uint64_t seed) {
  std::vector<size_t> chunks;
  if (split == Split::kWhole) {
    if (size) chunks.push_back(size);
    return chunks;
  }
  Rng rng(seed);
  size_t left = size;
  while (left > 0) {
    size_t n = 1;
    if (split == Split::kRandom) {
      // Mostly small reads (splits inside tokens), sometimes large ones.
      n = rng.Below(4) == 0 ? 1 + rng.Below(512) : 1 + rng.Below(16);
    }
    n = std::min(n, left);
    chunks.push_back(n);
    left -= n;
  }
  return chunks;
}

// An exact-size heap copy of the unconsumed bytes (see the file comment).
class MovingBuffer {
 public:
  std::string_view Snapshot(const std::string& bytes) {
    copy_.reset(new char[bytes.size() ? bytes.size() : 1]);
    memcpy(copy_.get(), bytes.data(), bytes.size());
    return std::string_view(copy_.get(), bytes.size());
  }

 private:
  std::unique_ptr<char[]> copy_;
};

// A broken invariant: print why and abort (libFuzzer saves the input).
[[noreturn]] inline void Fail(const char* what, const std::string& detail) {
  fprintf(stderr, "\n*** fuzz invariant broken: %s\n%s\n", what,
          detail.c_str());
  fflush(stderr);
  abort();
}

inline std::string Printable(std::string_view s, size_t max = 200) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > max) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

// The core invariant of an incremental codec: feeding the input in random
// reads (and byte by byte, for inputs small enough that this stays fast) gives
// the same outcome as feeding it whole. `run(split)` returns the outcome
// (anything with ==); `show(outcome)` prints it for the failure report.
template <typename RunFn, typename ShowFn>
void CheckSplitsAgree(size_t size, const std::string& context, RunFn run,
                      ShowFn show) {
  const auto whole = run(Split::kWhole);
  std::vector<Split> others = {Split::kRandom};
  if (size <= 512) others.push_back(Split::kBytewise);
  for (Split split : others) {
    const auto got = run(split);
    if (!(got == whole)) {
      Fail("outcome depends on how the input is split",
           context + "\n--- whole:\n" + show(whole) + "--- " +
               SplitName(split) + ":\n" + show(got));
    }
  }
}

}  // namespace gearbox::fuzz
