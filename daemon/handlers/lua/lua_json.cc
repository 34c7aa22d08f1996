// gearbox.json.encode / decode on RapidJSON (already gearbox's JSON library:
// no second one, and no Lua C module to find at run time). decode streams
// RapidJSON's SAX events straight onto the Lua stack: no DOM in between.
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <array>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "daemon/handlers/lua/lua_api.h"

namespace gearbox::lua {
namespace {

constexpr int kMaxDepth = 200;  // nesting, both ways: a cycle ends here

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

bool IsNull(lua_State* L, int i) {
  return lua_type(L, i) == LUA_TLIGHTUSERDATA && !lua_touserdata(L, i);
}

// n when the table at i is a sequence 1..n with no other keys, else -1.
int ArrayLength(lua_State* L, int i) {
  const int n = static_cast<int>(lua_objlen(L, i));
  if (n == 0) return -1;  // {} is an object
  int keys = 0;
  lua_pushnil(L);
  while (lua_next(L, i)) {
    ++keys;
    lua_pop(L, 1);
  }
  return keys == n ? n : -1;
}

const char* Encode(lua_State* L, int i, Writer& w, int depth);

// An integral number within a double's exact range is written as an integer.
const char* EncodeNumber(double d, Writer& w) {
  if (!std::isfinite(d)) return "cannot encode NaN or infinity";
  if (d == std::floor(d) && std::fabs(d) < 9007199254740992.0) {
    w.Int64(static_cast<int64_t>(d));
  } else {
    w.Double(d);
  }
  return nullptr;
}

// The table at i is the sequence 1..n.
const char* EncodeArray(lua_State* L, int i, int n, Writer& w, int depth) {
  w.StartArray();
  for (int k = 1; k <= n; ++k) {
    lua_rawgeti(L, i, k);
    const char* err = Encode(L, lua_gettop(L), w, depth + 1);
    lua_pop(L, 1);
    if (err) return err;
  }
  w.EndArray();
  return nullptr;
}

const char* EncodeObject(lua_State* L, int i, Writer& w, int depth) {
  w.StartObject();
  lua_pushnil(L);
  while (lua_next(L, i)) {
    const int t = lua_type(L, -2);
    if (t != LUA_TSTRING && t != LUA_TNUMBER) {
      lua_pop(L, 2);
      return "cannot encode a table key that is not a string or number";
    }
    lua_pushvalue(L, -2);  // tolstring converts a number key in place
    size_t len;
    const char* key = lua_tolstring(L, -1, &len);
    w.Key(key, static_cast<rapidjson::SizeType>(len));
    lua_pop(L, 1);
    const char* err = Encode(L, lua_gettop(L), w, depth + 1);
    lua_pop(L, 1);
    if (err) {
      lua_pop(L, 1);
      return err;
    }
  }
  w.EndObject();
  return nullptr;
}

const char* EncodeTable(lua_State* L, int i, Writer& w, int depth) {
  if (depth >= kMaxDepth) return "nested too deep (a cycle?)";
  luaL_checkstack(L, 4, "gearbox.json.encode");
  const int n = ArrayLength(L, i);
  if (n >= 0) return EncodeArray(L, i, n, w, depth);
  return EncodeObject(L, i, w, depth);
}

// Writes the value at stack index i; an error message on failure.
const char* Encode(lua_State* L, int i, Writer& w, int depth) {
  switch (lua_type(L, i)) {
    case LUA_TNIL:
      w.Null();
      return nullptr;
    case LUA_TBOOLEAN:
      w.Bool(lua_toboolean(L, i));
      return nullptr;
    case LUA_TNUMBER:
      return EncodeNumber(lua_tonumber(L, i), w);
    case LUA_TSTRING: {
      size_t len;
      const char* s = lua_tolstring(L, i, &len);
      w.String(s, static_cast<rapidjson::SizeType>(len));
      return nullptr;
    }
    case LUA_TLIGHTUSERDATA:
      if (!IsNull(L, i)) break;
      w.Null();
      return nullptr;
    case LUA_TTABLE:
      return EncodeTable(L, i, w, depth);
    default:
      break;
  }
  return "cannot encode a value of this type";
}

// gearbox.json.encode(value) -> string | nil, err
int JsonEncode(lua_State* L) {
  luaL_checkany(L, 1);
  rapidjson::StringBuffer buffer;
  Writer w(buffer);
  if (const char* err = Encode(L, 1, w, 0)) {
    lua_pushnil(L);
    lua_pushstring(L, err);
    return 2;
  }
  lua_pushlstring(L, buffer.GetString(), buffer.GetSize());
  return 1;
}

// SAX events -> Lua values: each finished value is stored into the
// container below it (an array's next index, or an object's pending key,
// which Key pushed between the two).
class Builder {
 public:
  explicit Builder(lua_State* L) : L_(L) {}
  bool Null() {
    lua_pushlightuserdata(L_, nullptr);
    return Stored();
  }
  bool Bool(bool b) {
    lua_pushboolean(L_, b);
    return Stored();
  }
  bool Int(int i) { return Double(i); }
  bool Uint(unsigned u) { return Double(u); }
  // Beyond 2^53 a Lua number is the nearest double.
  bool Int64(int64_t i) { return Double(static_cast<double>(i)); }
  bool Uint64(uint64_t u) { return Double(static_cast<double>(u)); }
  bool Double(double d) {
    lua_pushnumber(L_, d);
    return Stored();
  }
  bool RawNumber(const char*, rapidjson::SizeType, bool) { return false; }
  bool String(const char* s, rapidjson::SizeType len, bool) {
    lua_pushlstring(L_, s, len);
    return Stored();
  }
  bool Key(const char* s, rapidjson::SizeType len, bool) {
    lua_pushlstring(L_, s, len);
    return true;
  }
  bool StartObject() { return Open(kObject); }
  bool EndObject(rapidjson::SizeType) { return Close(); }
  bool StartArray() { return Open(0); }
  bool EndArray(rapidjson::SizeType) { return Close(); }

 private:
  static constexpr int kObject = -1;  // in open_: an object, else an index

  // Sized for a small container (a database row, its array): an array's
  // first slots live in the table's own allocation, an object's first keys
  // need no rehash as they arrive.
  bool Open(int kind) {
    if (depth_ >= kMaxDepth || !lua_checkstack(L_, 4)) return false;
    if (kind == kObject) {
      lua_createtable(L_, 0, 4);
    } else {
      lua_createtable(L_, 4, 0);
    }
    open_[depth_++] = kind;
    return true;
  }
  bool Close() {
    --depth_;
    return Stored();
  }
  bool Stored() {
    if (depth_ == 0) return true;  // the top-level value stays
    int& open = open_[depth_ - 1];
    if (open == kObject) {
      lua_rawset(L_, -3);
    } else {
      lua_rawseti(L_, -2, ++open);
    }
    return true;
  }

  lua_State* L_;
  std::array<int, kMaxDepth> open_;  // per open container: kObject or a count
  int depth_ = 0;
};

}  // namespace

int PushJson(lua_State* L, const char* text, size_t len) {
  const int top = lua_gettop(L);
  Builder builder(L);
  rapidjson::Reader reader;
  rapidjson::MemoryStream stream(text, len);
  rapidjson::ParseResult ok =
      reader.Parse<rapidjson::kParseStopWhenDoneFlag>(stream, builder);
  if (!ok) {
    lua_settop(L, top);
    lua_pushnil(L);
    lua_pushfstring(L, "%s at byte %d", rapidjson::GetParseError_En(ok.Code()),
                    static_cast<int>(ok.Offset()));
    return 2;
  }
  // Only whitespace may follow the value.
  for (size_t i = stream.Tell(); i < len; ++i) {
    if (!isspace(static_cast<unsigned char>(text[i]))) {
      lua_settop(L, top);
      lua_pushnil(L);
      lua_pushfstring(L, "unexpected text after the value at byte %d",
                      static_cast<int>(i));
      return 2;
    }
  }
  return 1;
}

namespace {

// gearbox.json.decode(text) -> value | nil, err
int JsonDecode(lua_State* L) {
  size_t len;
  const char* text = luaL_checklstring(L, 1, &len);
  return PushJson(L, text, len);
}

}  // namespace

void InstallJson(lua_State* L, Host* host) {
  lua_pushlightuserdata(L, nullptr);
  lua_setfield(L, -2, "null");
  lua_newtable(L);
  SetFunction(L, host, "encode", JsonEncode);
  SetFunction(L, host, "decode", JsonDecode);
  lua_setfield(L, -2, "json");
}

}  // namespace gearbox::lua
