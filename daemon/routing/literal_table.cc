#include "daemon/routing/literal_table.h"

#include <utility>

namespace gearbox {

void LiteralTable::Set(std::string_view key, uint32_t value) {
  // At most half full: Find's probe always ends at an empty slot, and stays
  // short.
  if (2 * (size_ + 1) > slots_.size()) Grow();
  const uint64_t hash = Hash(key);
  for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.value == kNone) {
      slot = Slot{hash, value, std::string(key)};
      ++size_;
      return;
    }
    if (slot.hash == hash && slot.key == key) {
      slot.value = value;
      return;
    }
  }
}

void LiteralTable::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 4 : 2 * old.size(), Slot{});
  mask_ = slots_.size() - 1;
  size_ = 0;
  for (Slot& slot : old) {
    if (slot.value != kNone) Set(slot.key, slot.value);
  }
}

}  // namespace gearbox
