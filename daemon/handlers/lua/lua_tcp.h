// A cosocket's state (the userdata behind gearbox.tcp()).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <string>

#include "daemon/handlers/lua/lua_host.h"

namespace gearbox::lua {

struct TcpSocket {
  int fd = -1;
  // The coroutine that made it; null once that one has ended (the socket is
  // closed then, and every call answers nil, "closed").
  WaitCtx* owner = nullptr;
  int timeout_ms = 0;   // each wait of connect, send and receive
  std::string key;      // the pool's: "127.0.0.1:6379" or "unix:/path"
  bool reused = false;  // came from the keep-alive pool
  std::string in;       // received, not yet returned by receive()
  size_t sent = 0;      // of the send() in progress
  bool eof = false;

  void Close() {
    if (fd >= 0) close(fd);
    fd = -1;
    in.clear();
    sent = 0;
    eof = false;
  }
};

// Closes every socket ctx opened and forgets ctx (at the coroutine's end).
void CloseSockets(WaitCtx& ctx);

}  // namespace gearbox::lua
