// Listening sockets: passed by systemd (socket activation, matched by
// FileDescriptorName=) or bound by gearboxd from [[listen]].
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "config/config.h"

namespace gearbox {

struct Listener {
  int fd = -1;
  Protocol protocol = Protocol::kHttp;
  std::string name;
  std::string address;
  bool from_systemd =
      false;  // never shutdown() or unlink a socket systemd owns
};

using Listeners = std::vector<Listener>;

// Takes the sockets systemd passed (LISTEN_FDS/LISTEN_FDNAMES) or binds each
// [[listen]] address. Listening fds are non-blocking and close-on-exec. Returns
// an error naming the failed call and its arguments.
std::variant<Listeners, std::string> AcquireListeners(
    const std::vector<ListenConfig>& config);

// The address a listening fd is bound to, e.g. "127.0.0.1:43121" (the real port
// when the config asked for port 0) or "unix:/run/gearbox/http.sock".
std::string BoundAddress(int fd);

// Closes the fds (and unlinks unix sockets gearboxd created itself).
void ReleaseListeners(Listeners& listeners);

}  // namespace gearbox
