#include "daemon/handlers/lua/lua_alloc.h"

namespace gearbox::lua {

void CappedAlloc::Install(lua_State* L) {
  inner_ = lua_getallocf(L, &inner_ud_);
  used_ = static_cast<size_t>(lua_gc(L, LUA_GCCOUNT, 0)) * 1024 +
          static_cast<size_t>(lua_gc(L, LUA_GCCOUNTB, 0));
  lua_setallocf(L, &CappedAlloc::Allocate, this);
}

void* CappedAlloc::Allocate(void* ud, void* ptr, size_t osize, size_t nsize) {
  auto* self = static_cast<CappedAlloc*>(ud);
  // LuaJIT passes the old size of a block it frees or resizes (0 for new).
  const size_t old = ptr ? osize : 0;
  if (nsize > old && self->armed_ && self->used_ + (nsize - old) > self->cap_) {
    self->refused_ = true;
    return nullptr;  // LuaJIT raises "not enough memory"
  }
  void* block = self->inner_(self->inner_ud_, ptr, osize, nsize);
  if (block || nsize == 0) self->used_ = self->used_ - old + nsize;
  return block;
}

}  // namespace gearbox::lua
