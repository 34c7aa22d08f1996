// Shared by the module tests: where the built modules are, a daemon with
// [[module]] tables, /proc readers for descriptor and epoll-watch leaks, and
// a client that holds many requests in flight at once.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace gearbox::testing {

// The absolute path of a runfile ("sdk/libtimerwait.so"); fails the test and
// returns "" when it is missing.
std::string Runfile(const std::string& relative);

// "[[module]]\nname = ...\npath = ...\n".
std::string ModuleTable(const std::string& name, const std::string& path);

// Every model's section; the daemon uses the chosen model's. `workers` is
// the size of every model (threads, children, loops: loops = 1 always).
std::string ModelSections(int workers);

// A daemon, and its log on failure.
class ModuleTest : public ::testing::Test {
 protected:
  void StartWith(const std::string& sections, bool default_routes = true,
                 const std::string& server = "");
  void TearDown() override;
  int port() const { return daemon_->port(); }
  std::unique_ptr<Daemon> daemon_;
};

// --- /proc: the daemon and its children
// ---------------------------------------

// `pid` and the processes whose parent it is.
std::vector<pid_t> ProcessTree(pid_t pid);
// Open descriptors of the whole tree.
int TreeFdCount(pid_t pid);
// Each open descriptor of the tree as "PID fd N: TARGET", an IPv4 TCP
// socket's TARGET followed by its ports and state: what a leak check prints
// when the count is off.
std::vector<std::string> TreeFds(pid_t pid);
// The lines of `a` that are not in `b`, one per line.
std::string FdsOnlyIn(const std::vector<std::string>& a,
                      const std::vector<std::string>& b);
// Descriptors registered in every epoll instance of the tree (the "tfd:"
// lines of /proc/PID/fdinfo of each eventpoll fd): a libevent event left
// behind shows up here.
int TreeEpollWatches(pid_t pid);

// --- load -------------------------------------------------------------------

struct Burst {
  std::vector<HttpResponse> responses;
  double elapsed_ms = 0;  // first request sent -> last response read
};

// Opens `n` connections, sends `GET target` (Connection: close) on each, then
// reads every response: n requests in flight at once.
Burst ConcurrentGets(int port, const std::string& target, int n,
                     Millis timeout);

}  // namespace gearbox::testing
