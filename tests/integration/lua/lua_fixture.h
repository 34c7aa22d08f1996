// Shared by the Lua tests: a daemon serving the suite's scripts, and a real
// line-protocol TCP backend for the cosocket tests.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "tests/integration/harness.h"
#include "tests/integration/modules/modules_fixture.h"

namespace gearbox::testing {

// A TCP server on 127.0.0.1:0 answering each line: "ping" -> "pong",
// "hang" -> nothing (the connection stays open), "close" -> closes it,
// "echo X" -> "X". One thread, poll(); stops with the object.
class LineBackend {
 public:
  LineBackend();
  ~LineBackend();
  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  void Serve();
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

// A port nothing listens on (bound, then closed).
int ClosedPort();

// The absolute path of a script of tests/integration/lua/scripts.
std::string TestScript(const std::string& name);

// "[[route]]\npath = ...\nhandler = \"lua\"\nscript = ...\n".
std::string LuaRoute(const std::string& path, const std::string& script,
                     const std::string& extra = "");

// Waits until the log has `text`; npos on timeout.
size_t WaitForLog(const Daemon& daemon, const std::string& text,
                  Millis timeout = Millis(10000));

// The 1-based line of `script` that contains `text` (0: none).
int LineOf(const std::string& script, const std::string& text);

}  // namespace gearbox::testing
