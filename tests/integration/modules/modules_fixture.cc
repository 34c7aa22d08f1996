#include "tests/integration/modules/modules_fixture.h"

#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>

#include "tests/support/proc_state.h"
#include "tests/support/tcp_state.h"

namespace gearbox::testing {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  return names;
}

// socket inode -> "tcp :LOCAL -> :REMOTE state=N" (tcp_state.h: IPv4).
std::map<uint64_t, std::string> TcpByInode() {
  std::map<uint64_t, std::string> by_inode;
  for (const TcpSocket& s : TcpSockets()) {
    by_inode[s.inode] = "tcp :" + std::to_string(s.local_port) +
                        " -> :" + std::to_string(s.remote_port) +
                        " state=" + std::to_string(s.state);
  }
  return by_inode;
}

}  // namespace

std::string Runfile(const std::string& relative) {
  char resolved[PATH_MAX];
  if (!realpath(relative.c_str(), resolved)) {
    ADD_FAILURE() << "runfile " << relative << " not found (cwd is the "
                  << "runfiles root under bazel test)";
    return "";
  }
  return resolved;
}

std::string ModuleTable(const std::string& name, const std::string& path) {
  return "[[module]]\nname = \"" + name + "\"\npath = \"" + path + "\"\n\n";
}

std::string ModelSections(int workers) {
  const std::string n = std::to_string(workers);
  return "[threadpool]\nthreads = " + n + "\nqueue = 1024\n\n" +
         "[prefork]\nworkers = " + n + "\n\n" + "[async]\nloops = 1\n\n" +
         "[limits]\nmax_connections = 10000\n\n";
}

void ModuleTest::StartWith(const std::string& sections, bool default_routes,
                           const std::string& server) {
  DaemonConfig config;
  config.model = ModelUnderTest();
  config.server = server;
  config.sections = sections;
  config.default_routes = default_routes;
  std::string error;
  daemon_ = Daemon::Start(config, &error);
  ASSERT_NE(daemon_, nullptr) << error;
}

void ModuleTest::TearDown() {
  if (HasFailure() && daemon_) {
    std::string log = daemon_->Log();
    if (log.size() > 8000) log = "..." + log.substr(log.size() - 8000);
    ADD_FAILURE() << "model=" << ModelUnderTest() << " gearboxd log:\n" << log;
  }
  daemon_.reset();
}

std::vector<pid_t> ProcessTree(pid_t pid) {
  std::vector<pid_t> tree = {pid};
  for (pid_t child : ChildrenOf(pid)) tree.push_back(child);
  return tree;
}

int TreeFdCount(pid_t pid) {
  int n = 0;
  for (pid_t p : ProcessTree(pid)) {
    n += static_cast<int>(Entries("/proc/" + std::to_string(p) + "/fd").size());
  }
  return n;
}

std::vector<std::string> TreeFds(pid_t pid) {
  const std::map<uint64_t, std::string> tcp = TcpByInode();
  std::vector<std::string> fds;
  for (pid_t p : ProcessTree(pid)) {
    const std::string proc = "/proc/" + std::to_string(p);
    for (const std::string& fd : Entries(proc + "/fd")) {
      char target[128] = {};
      if (readlink((proc + "/fd/" + fd).c_str(), target, sizeof target - 1) <
          0) {
        continue;
      }
      std::string what = target;
      if (what.starts_with("socket:[")) {
        const auto it = tcp.find(strtoull(target + 8, nullptr, 10));
        if (it != tcp.end()) what += " " + it->second;
      }
      fds.push_back(std::to_string(p) + " fd " + fd + ": " + what);
    }
  }
  return fds;
}

std::string FdsOnlyIn(const std::vector<std::string>& a,
                      const std::vector<std::string>& b) {
  std::string only;
  for (const std::string& fd : a) {
    if (std::find(b.begin(), b.end(), fd) == b.end()) only += fd + "\n";
  }
  return only;
}

int TreeEpollWatches(pid_t pid) {
  int watches = 0;
  for (pid_t p : ProcessTree(pid)) {
    const std::string proc = "/proc/" + std::to_string(p);
    for (const std::string& fd : Entries(proc + "/fd")) {
      char target[128] = {};
      if (readlink((proc + "/fd/" + fd).c_str(), target, sizeof target - 1) <
              0 ||
          std::string(target) != "anon_inode:[eventpoll]") {
        continue;
      }
      std::ifstream info(proc + "/fdinfo/" + fd);
      for (std::string line; std::getline(info, line);) {
        if (line.rfind("tfd:", 0) == 0) ++watches;
      }
    }
  }
  return watches;
}

Burst ConcurrentGets(int port, const std::string& target, int n,
                     Millis timeout) {
  std::vector<Connection> connections;
  Burst burst;
  for (int i = 0; i < n; ++i) connections.push_back(Connection::Open(port));
  const auto start = Clock::now();
  const std::string request = GetRequest(target, "Connection: close\r\n");
  for (Connection& c : connections) {
    if (c.ok()) c.Send(request);
  }
  for (Connection& c : connections) {
    if (!c.ok()) {
      HttpResponse failed;
      failed.error = "connect: " + c.error();
      burst.responses.push_back(failed);
      continue;
    }
    burst.responses.push_back(c.ReadResponse(timeout));
  }
  burst.elapsed_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return burst;
}

}  // namespace gearbox::testing
