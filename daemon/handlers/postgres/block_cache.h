// Memory blocks of one size kept for reuse, at most `capacity` of them: an
// object made and destroyed once per request (a PgExchange) takes a kept
// block instead of a malloc and a free each time. One per pool, so used by
// one worker's thread only (as the pool is): no locks. Kept blocks are
// poisoned under AddressSanitizer, so a use after the object's end is still
// reported.
#pragma once

#include <sanitizer/asan_interface.h>

#include <cstddef>
#include <new>

namespace gearbox::postgres {

class BlockCache {
 public:
  explicit BlockCache(size_t capacity) : capacity_(capacity) {}
  ~BlockCache() {
    while (head_) ::operator delete(Pop());
  }
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A block of `size` bytes: a kept one when it has that size.
  void* Take(size_t size) {
    if (head_ && size == size_) return Pop();
    return ::operator new(size);
  }
  // Ends the use of a block from Take(size): kept when there is room and it
  // has the kept blocks' size, else freed.
  void Give(void* block, size_t size) {
    if (kept_ == capacity_ || (kept_ > 0 && size != size_) ||
        size < sizeof(Free)) {
      ::operator delete(block);
      return;
    }
    size_ = size;
    Free* f = static_cast<Free*>(block);
    f->next = head_;
    head_ = f;
    ++kept_;
    ASAN_POISON_MEMORY_REGION(block, size);
  }
  size_t kept() const { return kept_; }

 private:
  struct Free {
    Free* next;
  };
  void* Pop() {
    Free* f = head_;
    ASAN_UNPOISON_MEMORY_REGION(f, size_);
    head_ = f->next;
    --kept_;
    return f;
  }

  const size_t capacity_;
  size_t size_ = 0;  // of every kept block
  size_t kept_ = 0;
  Free* head_ = nullptr;
};

}  // namespace gearbox::postgres
