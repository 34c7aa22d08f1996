// gearbox.tcp(): a cosocket. The calls that may wait are Lua (tcp_methods,
// lua_tcp_methods.cc): they loop over these non-blocking primitives, which
// return false plus the fd events to wait for when the kernel says EAGAIN,
// and yield a WaitFds Step between tries. A C function cannot continue after
// lua_yield (LuaJIT has no lua_yieldk), so the loop lives in Lua.
#include "daemon/handlers/lua/lua_tcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "daemon/handlers/lua/lua_api.h"

namespace gearbox::lua {
namespace {

constexpr const char* kMeta = "gearbox.tcp";
constexpr int kDefaultTimeoutMs = 60000;  // OpenResty's lua_socket_*_timeout
constexpr int kDefaultPoolSize = 30;      // ... and lua_socket_pool_size
constexpr int kDefaultIdleMs = 60000;     // ... and its keepalive_timeout

TcpSocket& Checked(lua_State* L) {
  return *static_cast<TcpSocket*>(luaL_checkudata(L, 1, kMeta));
}

// nil, "connection refused": OpenResty's spelling of errno.
int Failed(lua_State* L, int err) {
  std::string text = err == EPIPE ? "closed" : strerror(err);
  if (!text.empty()) text[0] = static_cast<char>(tolower(text[0]));
  lua_pushnil(L);
  lua_pushlstring(L, text.data(), text.size());
  return 2;
}

int FailedWith(lua_State* L, const char* err) {
  lua_pushnil(L);
  lua_pushstring(L, err);
  return 2;
}

int WaitFor(lua_State* L, uint8_t events) {
  lua_pushboolean(L, 0);
  lua_pushinteger(L, events);
  return 2;
}

// The calling coroutine's own open socket, or an error to return.
const char* Usable(lua_State* L, const TcpSocket& s) {
  if (s.owner == nullptr || s.owner != HostOf(L).current) {
    return s.owner ? "socket belongs to another request" : "closed";
  }
  return s.fd < 0 ? "closed" : nullptr;
}

// gearbox.tcp() -> sock
int NewSocket(lua_State* L) {
  WaitCtx& ctx = WaitingCaller(L, "gearbox.tcp");
  auto* s = new (lua_newuserdata(L, sizeof(TcpSocket))) TcpSocket();
  s->owner = &ctx;
  s->timeout_ms = kDefaultTimeoutMs;
  luaL_getmetatable(L, kMeta);
  lua_setmetatable(L, -2);
  ctx.sockets.push_back(s);
  return 1;
}

// sockaddr for "unix:/path" or a numeric IPv4/IPv6 address; "" on success.
const char* Address(const char* host, int port, sockaddr_storage* sa,
                    socklen_t* len) {
  memset(sa, 0, sizeof *sa);
  if (strncmp(host, "unix:", 5) == 0) {
    auto* un = reinterpret_cast<sockaddr_un*>(sa);
    const size_t n = strlen(host + 5);
    if (n == 0 || n >= sizeof un->sun_path) return "bad unix socket path";
    un->sun_family = AF_UNIX;
    memcpy(un->sun_path, host + 5, n);
    *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n + 1);
    return "";
  }
  if (port < 1 || port > 65535) return "bad port";
  auto* in4 = reinterpret_cast<sockaddr_in*>(sa);
  if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
    in4->sin_family = AF_INET;
    in4->sin_port = htons(static_cast<uint16_t>(port));
    *len = sizeof *in4;
    return "";
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(sa);
  if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<uint16_t>(port));
    *len = sizeof *in6;
    return "";
  }
  return "host names are not resolved (a lookup would block the worker): "
         "use a numeric address or unix:/path";
}

// c.connect(sock, host, port) -> 1 | false, events | nil, err
int Connect(lua_State* L) {
  TcpSocket& s = Checked(L);
  const char* host = luaL_checkstring(L, 2);
  const int port = static_cast<int>(luaL_optinteger(L, 3, 0));
  if (s.owner == nullptr || s.owner != HostOf(L).current) {
    return FailedWith(L, Usable(L, s));
  }
  s.Close();  // connecting again drops the old connection, as OpenResty does
  sockaddr_storage sa;
  socklen_t len = 0;
  if (const char* err = Address(host, port, &sa, &len); *err) {
    return FailedWith(L, err);
  }
  s.key = strncmp(host, "unix:", 5) == 0
              ? std::string(host)
              : std::string(host) + ":" + std::to_string(port);
  s.fd = HostOf(L).pool.Take(s.key);
  if (s.fd >= 0) {
    s.reused = true;
    lua_pushinteger(L, 1);
    return 1;
  }
  s.reused = false;
  s.fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s.fd < 0) return Failed(L, errno);
  if (sa.ss_family != AF_UNIX) {
    const int one = 1;
    setsockopt(s.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (connect(s.fd, reinterpret_cast<sockaddr*>(&sa), len) == 0) {
    lua_pushinteger(L, 1);
    return 1;
  }
  if (errno == EINPROGRESS) return WaitFor(L, kFdWritable);
  const int err = errno;
  s.Close();
  return Failed(L, err);
}

// c.connected(sock) -> 1 | nil, err: how a non-blocking connect ended.
int Connected(lua_State* L) {
  TcpSocket& s = Checked(L);
  if (const char* err = Usable(L, s)) return FailedWith(L, err);
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) {
    s.Close();
    return Failed(L, err);
  }
  lua_pushinteger(L, 1);
  return 1;
}

// c.send(sock, data) -> bytes | false, events | nil, err. Resumes where the
// last try stopped (s.sent).
int Send(lua_State* L) {
  TcpSocket& s = Checked(L);
  size_t len;
  const char* data = luaL_checklstring(L, 2, &len);
  if (const char* err = Usable(L, s)) return FailedWith(L, err);
  while (s.sent < len) {
    const ssize_t n = send(s.fd, data + s.sent, len - s.sent, MSG_NOSIGNAL);
    if (n >= 0) {
      s.sent += static_cast<size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return WaitFor(L, kFdWritable);
    } else if (errno != EINTR) {
      const int err = errno;
      s.Close();
      return Failed(L, err);
    }
  }
  s.sent = 0;
  lua_pushinteger(L, static_cast<lua_Integer>(len));
  return 1;
}

// How much of s.in a receive pattern takes: the bytes to return and the
// bytes to consume, or npos while more must be read.
struct Take {
  size_t give = std::string::npos, consume = 0;
};
Take Satisfied(const TcpSocket& s, lua_State* L) {
  if (lua_type(L, 2) == LUA_TNUMBER) {
    const size_t n =
        static_cast<size_t>(std::max<lua_Integer>(0, lua_tointeger(L, 2)));
    if (s.in.size() >= n) return {n, n};
    return {};
  }
  const char* p = luaL_optstring(L, 2, "*l");
  if (*p == '*') ++p;
  if (*p == 'a') return s.eof ? Take{s.in.size(), s.in.size()} : Take{};
  if (*p != 'l') luaL_argerror(L, 2, "\"*l\", \"*a\" or a byte count");
  const size_t nl = s.in.find('\n');
  if (nl == std::string::npos) return {};
  size_t end = nl;
  if (end > 0 && s.in[end - 1] == '\r') --end;  // as OpenResty: \r is dropped
  return {end, nl + 1};
}

// c.receive(sock, pattern) -> data | false, events | nil, err, partial
int Receive(lua_State* L) {
  TcpSocket& s = Checked(L);
  if (const char* err = Usable(L, s)) return FailedWith(L, err);
  char buffer[16384];
  for (;;) {
    const Take take = Satisfied(s, L);
    if (take.give != std::string::npos) {
      lua_pushlstring(L, s.in.data(), take.give);
      s.in.erase(0, take.consume);
      return 1;
    }
    if (s.eof) {
      lua_pushnil(L);
      lua_pushliteral(L, "closed");
      lua_pushlstring(L, s.in.data(), s.in.size());
      s.Close();
      return 3;
    }
    const ssize_t n = recv(s.fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      s.in.append(buffer, static_cast<size_t>(n));
    } else if (n == 0) {
      s.eof = true;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return WaitFor(L, kFdReadable);
    } else if (errno != EINTR) {
      const int err = errno;
      lua_pushnil(L);
      lua_pushstring(L, strerror(err));
      lua_pushlstring(L, s.in.data(), s.in.size());
      s.Close();
      return 3;
    }
  }
}

// c.wait(sock, events) -> true | nil, "timeout": yields a WaitFds Step.
int Wait(lua_State* L) {
  TcpSocket& s = Checked(L);
  const auto events = static_cast<uint8_t>(luaL_checkinteger(L, 2));
  WaitCtx& ctx = WaitingCaller(L, "a cosocket");
  if (const char* err = Usable(L, s)) return FailedWith(L, err);
  ctx.step =
      Step::WaitFds({{s.fd, events}}, std::chrono::milliseconds(s.timeout_ms));
  return YieldStep(L, ctx, WaitCtx::Gives::kReady);
}

// c.abandon(sock) -> partial: after a timeout, the bytes received so far
// (returned as receive's third value) and the send in progress forgotten.
int Abandon(lua_State* L) {
  TcpSocket& s = Checked(L);
  lua_pushlstring(L, s.in.data(), s.in.size());
  s.in.clear();
  s.sent = 0;
  return 1;
}

// sock:settimeout(ms): every later wait of this socket.
int SetTimeout(lua_State* L) {
  TcpSocket& s = Checked(L);
  const lua_Integer ms = luaL_checkinteger(L, 2);
  s.timeout_ms = static_cast<int>(std::clamp<lua_Integer>(ms, 0, 1 << 30));
  return 0;
}

// sock:close() -> 1 | nil, "closed"
int CloseSocket(lua_State* L) {
  TcpSocket& s = Checked(L);
  if (s.fd < 0) return FailedWith(L, "closed");
  s.Close();
  lua_pushinteger(L, 1);
  return 1;
}

// sock:setkeepalive([idle_ms[, pool_size]]) -> 1 | nil, err: the connection
// goes back to the worker's pool for its address; the object is closed.
int SetKeepAlive(lua_State* L) {
  TcpSocket& s = Checked(L);
  if (const char* err = Usable(L, s)) return FailedWith(L, err);
  if (!s.in.empty() || s.sent != 0) {
    return FailedWith(L, "unread data in buffer");
  }
  const lua_Integer idle = luaL_optinteger(L, 2, kDefaultIdleMs);
  const lua_Integer size = luaL_optinteger(L, 3, kDefaultPoolSize);
  HostOf(L).pool.Put(
      s.key, s.fd, std::chrono::milliseconds(idle > 0 ? idle : kDefaultIdleMs),
      static_cast<size_t>(std::max<lua_Integer>(size, 1)));
  s.fd = -1;
  s.Close();
  lua_pushinteger(L, 1);
  return 1;
}

// sock:getreusedtimes() -> 0 | 1: whether connect() took a pooled fd.
int ReusedTimes(lua_State* L) {
  lua_pushinteger(L, Checked(L).reused ? 1 : 0);
  return 1;
}

// __gc: the object is unreachable; its fd (if any) closes now.
int Collect(lua_State* L) {
  auto* s = static_cast<TcpSocket*>(lua_touserdata(L, 1));
  if (s->owner) std::erase(s->owner->sockets, s);
  s->Close();
  s->~TcpSocket();
  return 0;
}

// The methods that may wait, over the primitives (first chunk argument)
// and c.wait: loops that try, and yield between tries.
constexpr const char kMethods[] = R"lua(
local c = ...
local wait, abandon = c.wait, c.abandon
local function drive(sock, op, arg)
  while true do
    local r, e, p = op(sock, arg)
    if r ~= false then return r, e, p end
    local ok, err = wait(sock, e)
    if not ok then return nil, err, abandon(sock) end
  end
end
local M = {}
function M:connect(host, port)
  local r, e = c.connect(self, host, port)
  if r ~= false then return r, e end
  local ok, err = wait(self, e)
  if not ok then c.close(self) return nil, err end
  return c.connected(self)
end
function M:send(data) return drive(self, c.send, data) end
function M:receive(pattern) return drive(self, c.receive, pattern) end
M.settimeout = c.settimeout
M.close = c.close
M.setkeepalive = c.setkeepalive
M.getreusedtimes = c.getreusedtimes
return M
)lua";

}  // namespace

void CloseSockets(WaitCtx& ctx) {
  for (TcpSocket* s : ctx.sockets) {
    s->Close();
    s->owner = nullptr;
  }
  ctx.sockets.clear();
}

void InstallTcp(lua_State* L, Host* host) {
  luaL_newmetatable(L, kMeta);
  if (luaL_loadbuffer(L, kMethods, sizeof kMethods - 1, "=gearbox.tcp") != 0) {
    abort();  // the chunk above is gearbox's own: a broken build
  }
  lua_newtable(L);
  SetFunction(L, host, "connect", Connect);
  SetFunction(L, host, "connected", Connected);
  SetFunction(L, host, "send", Send);
  SetFunction(L, host, "receive", Receive);
  SetFunction(L, host, "wait", Wait);
  SetFunction(L, host, "abandon", Abandon);
  SetFunction(L, host, "settimeout", SetTimeout);
  SetFunction(L, host, "close", CloseSocket);
  SetFunction(L, host, "setkeepalive", SetKeepAlive);
  SetFunction(L, host, "getreusedtimes", ReusedTimes);
  lua_call(L, 1, 1);  // -> the methods table
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, Collect);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  SetFunction(L, host, "tcp", NewSocket);
}

}  // namespace gearbox::lua
