// The per-state memory cap ([lua] memory): a lua_Alloc that counts what its
// state holds and refuses growth past the cap while a script runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <luajit-2.1/lua.hpp>

namespace gearbox::lua {

class CappedAlloc {
 public:
  explicit CappedAlloc(int64_t cap) : cap_(static_cast<size_t>(cap)) {}

  // Puts this allocator in front of L's own (luaL_newstate's, which LuaJIT
  // builds for its address-space needs: in non-GC64 builds only that one
  // may allocate), counting from what L holds now.
  void Install(lua_State* L);

  // Refusals apply only while armed, i.e. inside a protected call: an
  // allocation outside one (a push before lua_resume) must never fail, or
  // LuaJIT would panic.
  void Arm(bool on) { armed_ = on; }
  size_t used() const { return used_; }
  size_t cap() const { return cap_; }
  // Growth refused since the last call (a memory error that a script may
  // have caught with pcall still means the state was at its cap).
  bool TakeRefused() {
    const bool r = refused_;
    refused_ = false;
    return r;
  }

 private:
  static void* Allocate(void* ud, void* ptr, size_t osize, size_t nsize);

  const size_t cap_;
  size_t used_ = 0;
  bool armed_ = false;
  bool refused_ = false;
  lua_Alloc inner_ = nullptr;
  void* inner_ud_ = nullptr;
};

}  // namespace gearbox::lua
