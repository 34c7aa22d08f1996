// The router's string -> number map (a trie node's literal children, a
// trie's exact paths): every request looks up at least one key, so lookups
// hash with a few word loads instead of std::hash's byte loop, probe a flat
// array instead of chasing bucket nodes, and allocate nothing. Keys come
// from the config only: a request can make a lookup miss, never make a probe
// sequence longer, so a weak hash cannot be turned against the server.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace gearbox {

class LiteralTable {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // The value of `key`, kNone when it has none.
  uint32_t Find(std::string_view key) const {
    if (slots_.empty()) return kNone;
    const uint64_t hash = Hash(key);
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& slot = slots_[i];
      if (slot.value == kNone) return kNone;  // half the slots are empty
      if (slot.hash == hash && EqualGivenHash(slot.key, key)) return slot.value;
    }
  }
  // Gives `key` the value `value` (not kNone), replacing the one it had.
  void Set(std::string_view key, uint32_t value);
  size_t size() const { return size_; }

  // For keys shorter than 8 bytes, equal hashes and equal lengths mean equal
  // keys, which spares Find a byte comparison on most path segments.
  static uint64_t Hash(std::string_view key) {
    const char* p = key.data();
    const size_t n = key.size();
    uint64_t h = n * kMul;
    if (n >= 8) {
      for (size_t i = 0; i + 8 < n; i += 8) h = Mix(h ^ Load64(p + i));
      return Mix(h ^ Load64(p + n - 8));  // overlaps the last full word
    }
    // Two overlapping 4-byte loads, or three byte loads, cover every byte:
    // the word is a one-to-one function of the key for its length, and
    // Mix (an odd multiply, then an xor-shift) is one-to-one too.
    uint64_t word = 0;
    if (n >= 4) {
      word = Load32(p) | uint64_t{Load32(p + n - 4)} << 32;
    } else if (n > 0) {
      word = Byte(p[0]) | Byte(p[n / 2]) << 8 | Byte(p[n - 1]) << 16;
    }
    return Mix(h ^ word);
  }

 private:
  static constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  struct Slot {
    uint64_t hash = 0;
    uint32_t value = kNone;  // kNone: an empty slot
    std::string key;
  };

  static uint64_t Load64(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static uint32_t Load32(const char* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static uint64_t Byte(char c) { return static_cast<uint8_t>(c); }
  static uint64_t Mix(uint64_t h) {
    h *= kMul;
    return h ^ (h >> 32);
  }
  // Whether keys of equal Hash are equal: a key shorter than 8 bytes needs
  // no byte comparison (see Hash).
  static bool EqualGivenHash(const std::string& a, std::string_view b) {
    return a.size() == b.size() &&
           (b.size() < 8 || std::memcmp(a.data(), b.data(), b.size()) == 0);
  }
  void Grow();

  std::vector<Slot> slots_;  // a power of two of them, at most half used
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace gearbox
