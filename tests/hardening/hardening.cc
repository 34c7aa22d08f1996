#include "tests/hardening/hardening.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gearbox::hardening {
namespace {

std::string Errno(const std::string& call) {
  return call + ": " + strerror(errno);
}

int MillisLeft(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(left + 1);
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Fields of /proc/PID/stat after the ")" that ends the command name (which may
// itself contain spaces and parentheses): [0] is the state, [1] the ppid, ...
std::vector<std::string> StatFields(pid_t pid) {
  std::string stat = ReadWhole("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  std::vector<std::string> out;
  if (close == std::string::npos) return out;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  while (rest >> field) out.push_back(field);
  return out;
}

// The number after `prefix` on the first line of /proc/PID/FILE starting
// with it, or -1.
long ProcLineNumber(pid_t pid, const char* file, std::string_view prefix) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) return atol(line.c_str() + prefix.size());
  }
  return -1;
}

}  // namespace

double MsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

std::string RenderSections(const Settings& s) {
  auto num = [](const char* key, int64_t v) {
    return std::string(key) + " = " + std::to_string(v) + "\n";
  };
  auto str = [](const char* key, const std::string& v) {
    return std::string(key) + " = \"" + v + "\"\n";
  };
  std::string t;
  t += "[threadpool]\n" + num("threads", s.threads) + num("queue", s.queue);
  t += s.threadpool_extra;
  t += "\n[prefork]\n" + num("workers", s.workers) + num("max_requests", 0);
  t += s.prefork_extra;
  t += "\n[async]\n" + num("loops", s.loops);
  t += s.async_extra;
  t += "\n[limits]\n";
  t += s.limits_extra;
  t += str("header_timeout", s.header_timeout);
  t += str("idle_timeout", s.idle_timeout);
  t += str("body_timeout", s.body_timeout);
  t += str("send_timeout", s.send_timeout);
  t += num("max_header_bytes", s.max_header_bytes);
  t += num("max_body_bytes", s.max_body_bytes);
  t += num("max_connections", s.max_connections);
  t += "\n[log]\nlevel = \"info\"\n";
  t += "\n[metrics]\ninterval = \"10s\"\n";
  if (s.crash_route) {
    t += "\n[[route]]\npath = \"/crash\"\nhandler = \"crash\"\n";
  }
  t += s.routes;
  return t;
}

// --- rlimits ----------------------------------------------------------------

NofileLimit::NofileLimit(uint64_t soft) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) {
    error_ = Errno("getrlimit(RLIMIT_NOFILE)");
    return;
  }
  old_soft_ = r.rlim_cur;
  r.rlim_cur = soft;
  if (setrlimit(RLIMIT_NOFILE, &r) != 0) {
    error_ = Errno("setrlimit(RLIMIT_NOFILE, " + std::to_string(soft) + ")");
    return;
  }
  ok_ = true;
}

NofileLimit::~NofileLimit() {
  if (!ok_) return;
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  r.rlim_cur = old_soft_;
  setrlimit(RLIMIT_NOFILE, &r);
}

uint64_t RaiseNofile(uint64_t want) {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  if (r.rlim_cur < want) {
    r.rlim_cur =
        r.rlim_max == RLIM_INFINITY ? want : std::min<rlim_t>(want, r.rlim_max);
    setrlimit(RLIMIT_NOFILE, &r);
    getrlimit(RLIMIT_NOFILE, &r);
  }
  return r.rlim_cur;
}

uint64_t NofileSoft() {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  return r.rlim_cur;
}

long DaemonNofile(pid_t pid) {
  // "Max open files  1024  20000  files": the soft value.
  return ProcLineNumber(pid, "limits", "Max open files");
}

// --- /proc ------------------------------------------------------------------

long RssKib(pid_t pid) { return ProcLineNumber(pid, "status", "VmRSS:"); }

double CpuSeconds(pid_t pid, bool with_reaped) {
  std::vector<std::string> f = StatFields(pid);
  // After ")": state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14).
  if (f.size() < 15) return -1;
  double ticks = atof(f[11].c_str()) + atof(f[12].c_str());
  if (with_reaped) ticks += atof(f[13].c_str()) + atof(f[14].c_str());
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

std::vector<pid_t> WorkerChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (pid_t child : ChildrenOf(parent)) {
    std::string comm;
    if (FILE* f =
            fopen(("/proc/" + std::to_string(child) + "/comm").c_str(), "r")) {
      char buf[64] = {};
      if (fgets(buf, sizeof(buf), f)) comm = buf;
      fclose(f);
    }
    if (comm != "gearboxd-guard\n") out.push_back(child);
  }
  return out;
}

double TreeCpuSeconds(pid_t pid) {
  double total = CpuSeconds(pid, /*with_reaped=*/true);
  if (total < 0) return -1;
  for (pid_t child : ChildrenOf(pid)) {
    double c = CpuSeconds(child);
    if (c > 0) total += c;
  }
  return total;
}

int FdCount(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

// --- raw sockets
// --------------------------------------------------------------

int StartConnect(int port, int rcvbuf, std::string* error) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    if (error) *error = Errno("socket");
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (rcvbuf > 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 &&
      errno != EINPROGRESS) {
    if (error)
      *error = Errno("connect(127.0.0.1:" + std::to_string(port) + ")");
    close(fd);
    return -1;
  }
  return fd;
}

bool FinishConnect(int fd, Millis timeout, std::string* error) {
  pollfd p{fd, POLLOUT, 0};
  int n;
  do {
    n = poll(&p, 1, static_cast<int>(timeout.count()));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    if (error) *error = n == 0 ? "connect: timed out" : Errno("poll");
    return false;
  }
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) {
    if (error) *error = std::string("connect: ") + strerror(err);
    return false;
  }
  return true;
}

bool SendAll(int fd, std::string_view bytes, Millis timeout,
             std::string* error) {
  const auto deadline = Clock::now() + timeout;
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, MillisLeft(deadline)) == 0) {
        if (error) {
          *error = "send: timed out after " + std::to_string(off) + " of " +
                   std::to_string(bytes.size()) + " bytes";
        }
        return false;
      }
      continue;
    }
    if (error) *error = Errno("send");
    return false;
  }
  return true;
}

Ending ReadUntilClosed(int fd, Millis timeout, Clock::time_point since) {
  Ending e;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    char buf[65536];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      e.bytes.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE))) {
      e.closed = true;
      e.reset = n < 0;
      e.at_ms = MsSince(since);
      break;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      e.closed = true;
      e.reset = true;
      e.at_ms = MsSince(since);
      break;
    }
    int left = MillisLeft(deadline);
    if (left == 0) break;
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, left);
  }
  e.status = StatusOf(e.bytes);
  return e;
}

int StatusOf(std::string_view bytes) {
  if (bytes.size() < 12 || bytes.substr(0, 5) != "HTTP/") return 0;
  size_t sp = bytes.find(' ');
  if (sp == std::string_view::npos || sp + 4 > bytes.size()) return 0;
  int status = 0;
  for (size_t i = sp + 1; i < sp + 4; ++i) {
    if (bytes[i] < '0' || bytes[i] > '9') return 0;
    status = status * 10 + (bytes[i] - '0');
  }
  return status;
}

// --- fixture
// ------------------------------------------------------------------

const std::string& HardeningTest::model() const {
  return gearbox::testing::ModelUnderTest();
}

void HardeningTest::Start(const Settings& settings) {
  DaemonConfig config;
  config.model = model();
  if (settings.crash_route) {
    // The harness writes [server] itself (DaemonConfig has no field for its
    // other keys) and TOML cannot reopen a table, so the key rides on the
    // model line: `model = "async"` NEWLINE `enable_crash_handler = true` #"
    config.model += "\"\nenable_crash_handler = true\n#";
  }
  config.sections = RenderSections(settings);
  std::string error;
  daemon_ = Daemon::Start(config, &error);
  ASSERT_NE(daemon_, nullptr) << error;
  // The harness returns at event=listening, before the model runs (prefork:
  // before its children exist). Wait until the generation is serving.
  const std::string log = gearbox::testing::WaitForLog(
      *daemon_, "event=generation_started", Millis(10000));
  ASSERT_NE(log.find("event=generation_started"), std::string::npos)
      << "no event=generation_started within 10 s:\n"
      << log;
  if (IsModel("prefork")) {
    // Every child (and the head guard) asleep in its event loop, not just
    // the first one: a test's first clients find them all free.
    const size_t want = static_cast<size_t>(settings.workers);
    const bool idle = gearbox::testing::WaitUntil(
        [&] {
          return WorkerChildrenOf(pid()).size() >= want &&
                 ChildrenWaiting(pid());
        },
        Millis(10000));
    ASSERT_TRUE(idle) << "prefork children did not start: "
                      << WorkerChildrenOf(pid()).size() << " of " << want;
  }
}

void HardeningTest::TearDown() {
  if (HasFailure() && daemon_) {
    std::string log = daemon_->Log();
    if (log.size() > 6000) log = "..." + log.substr(log.size() - 6000);
    ADD_FAILURE() << "model=" << model() << " gearboxd log ("
                  << daemon_->log_path() << "):\n"
                  << log;
  }
  daemon_.reset();
}

double HardeningTest::TimedHello(Millis timeout, std::string* error) {
  const auto start = Clock::now();
  HttpResponse r = gearbox::testing::Exchange(
      port(), gearbox::testing::GetRequest("/hello"), timeout);
  const double ms = MsSince(start);
  if (!r.error.empty() || r.status != 200 || r.body != "hello world\n") {
    if (error) {
      *error = "GET /hello: status " + std::to_string(r.status) + " error \"" +
               r.error + "\" after " + std::to_string(ms) + " ms";
    }
    return -1;
  }
  return ms;
}

void HardeningTest::ExpectHealthy(const std::string& when) {
  std::string error;
  double ms = TimedHello(Millis(5000), &error);
  EXPECT_GE(ms, 0) << when << ": " << error;
}

std::string HardeningTest::StatusJson() {
  return gearbox::testing::StatusJson(port());
}

int64_t HardeningTest::JsonNumber(const std::string& json,
                                  std::string_view key) {
  return gearbox::testing::JsonNumber(json, key);
}

void HardeningTest::Report(const std::string& what) const {
  const ::testing::TestInfo* info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  printf("[hardening] model=%s test=%s %s\n", model().c_str(),
         info ? info->name() : "-", what.c_str());
  fflush(stdout);
}

int HardeningMain(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!gearbox::testing::InitModelFromArgs(argc, argv)) return 2;
  // A crash test aborts the daemon on purpose: no core files in the sandbox.
  rlimit core{0, 0};
  setrlimit(RLIMIT_CORE, &core);
  // Client crowds need descriptors; spawned daemons inherit the raised limit.
  RaiseNofile(20000);
  return RUN_ALL_TESTS();
}

}  // namespace gearbox::hardening
