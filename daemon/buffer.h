// A growable byte buffer with a read cursor: append at the tail, consume from
// the head, compact only when needed. Unlike std::string, growing the tail does
// not zero-fill, so recv() can write straight into it.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace gearbox {

class Buffer {
 public:
  // Storage handed from one buffer to another (a worker's spares between
  // connections: read_blocks.h). From malloc/realloc; freed with free().
  struct Block {
    char* data = nullptr;
    size_t capacity = 0;
  };

  Buffer() = default;
  ~Buffer() { free(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::string_view view() const { return {data_ + head_, tail_ - head_}; }
  size_t capacity() const { return capacity_; }
  size_t size() const { return tail_ - head_; }
  bool empty() const { return head_ == tail_; }

  // A writable region of at least `min` bytes at the tail; Commit() what was
  // used.
  char* Reserve(size_t min) {
    if (capacity_ - tail_ < min) Grow(min);
    return data_ + tail_;
  }
  size_t writable() const { return capacity_ - tail_; }
  void Commit(size_t n) { tail_ += n; }
  void Append(std::string_view s) {
    if (s.empty()) return;  // memcpy() may not be given a null buffer
    memcpy(Reserve(s.size()), s.data(), s.size());
    tail_ += s.size();
  }
  void Consume(size_t n) {
    head_ += n;
    if (head_ == tail_) head_ = tail_ = 0;  // common case: everything consumed
  }
  // Cuts the capacity down to what the unconsumed bytes need (at least
  // kMinCapacity), for a connection that will wait a long time between reads.
  void Shrink() {
    const size_t used = tail_ - head_;
    if (used == 0) return Release();
    const size_t want = used > kMinCapacity ? used : kMinCapacity;
    if (capacity_ <= want) return;
    if (head_ > 0) {
      memmove(data_, data_ + head_, used);
      head_ = 0;
      tail_ = used;
    }
    if (char* p = static_cast<char*>(realloc(data_, want))) {
      data_ = p;
      capacity_ = want;
    }
  }
  // Gives the memory back (idle keep-alive connections should cost little).
  void Release() {
    if (head_ == tail_) free(Detach().data);
  }
  // An empty buffer's storage, handed over: the buffer is left without any
  // (as after Release). Nothing ({}) while bytes are unconsumed.
  Block Detach() {
    if (head_ != tail_) return {};
    const Block b{data_, capacity_};
    data_ = nullptr;
    head_ = tail_ = capacity_ = 0;
    return b;
  }
  // Storage for a buffer that has none, instead of allocating on the next
  // Reserve(). A buffer that has storage frees the block instead.
  void Adopt(Block b) {
    if (data_) return free(b.data);
    data_ = b.data;
    capacity_ = b.data ? b.capacity : 0;
  }

 private:
  static constexpr size_t kMinCapacity = 4096;

  void Grow(size_t min) {
    size_t used = tail_ - head_;
    if (head_ >
        0) {  // compact first: the parser works on offsets, not pointers
      memmove(data_, data_ + head_, used);
      head_ = 0;
      tail_ = used;
      if (capacity_ - tail_ >= min) return;
    }
    size_t cap = capacity_ ? capacity_ : kMinCapacity;
    while (cap - used < min) cap *= 2;
    char* p = static_cast<char*>(realloc(data_, cap));
    if (!p) abort();  // out of memory: nothing sensible to do per connection
    data_ = p;
    capacity_ = cap;
  }

  char* data_ = nullptr;
  size_t head_ = 0;
  size_t tail_ = 0;
  size_t capacity_ = 0;
};

}  // namespace gearbox
