// A listening unix socket (abstract, named per process) and clients for it:
// what a model's accept path needs in a unit test, without a network.
#pragma once

#include <chrono>
#include <string>

namespace gearbox::testing {

// A non-blocking listening socket bound to a fresh name; fd -1 on failure.
struct LocalListener {
  LocalListener();
  ~LocalListener();
  int fd = -1;
  std::string path;  // the abstract name, for ConnectLocal
};

// A blocking client connected to the abstract name `path`; -1 on failure.
int ConnectLocal(const std::string& path);

// Everything the peer sends until it closes, or until `timeout` passes.
std::string ReadToEof(int fd, std::chrono::milliseconds timeout =
                                  std::chrono::milliseconds(5000));

}  // namespace gearbox::testing
