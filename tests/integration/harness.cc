// The Daemon half of the integration harness: config file, spawn, readiness,
// signals and bounded shutdown of a real gearboxd.
#include "tests/integration/harness.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gearbox::testing {
namespace {

std::string& ModelStorage() {
  static std::string model;
  return model;
}

std::string Errno(const char* call) {
  return std::string(call) + ": " + strerror(errno);
}

std::string TempDir() {
  const char* dir = getenv("TEST_TMPDIR");
  if (dir && *dir) return dir;
  static std::string fallback = [] {
    char tmpl[] = "/tmp/gearbox-integration-XXXXXX";
    const char* made = mkdtemp(tmpl);
    return std::string(made ? made : "/tmp");
  }();
  return fallback;
}

bool Executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

// gearboxd from the runfiles: under `bazel test` the cwd is the workspace's
// runfiles root, so the relative path works; the others cover `bazel run` and
// running the test binary by hand.
std::string FindGearboxd() {
  if (const char* env = getenv("GEARBOXD"); env && Executable(env)) return env;
  if (Executable("daemon/gearboxd")) return "daemon/gearboxd";
  for (const char* root_var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    const char* root = getenv(root_var);
    if (!root || !*root) continue;
    const char* ws = getenv("TEST_WORKSPACE");
    std::string path = std::string(root) + "/" + (ws && *ws ? ws : "gearbox") +
                       "/daemon/gearboxd";
    if (Executable(path)) return path;
  }
  return "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

// The port of `bound=HOST:PORT` on the first `event=listening` line, or 0.
int ParseListeningPort(const std::string& log) {
  size_t pos = 0;
  while (pos < log.size()) {
    size_t eol = log.find('\n', pos);
    if (eol == std::string::npos) return 0;  // wait for the whole line
    std::string_view line(log.data() + pos, eol - pos);
    pos = eol + 1;
    if (line.find("event=listening") == std::string_view::npos) continue;
    size_t b = line.find(" bound=");
    if (b == std::string_view::npos) continue;
    std::string_view addr = line.substr(b + 7);
    addr = addr.substr(0, addr.find(' '));
    size_t colon = addr.rfind(':');
    if (colon == std::string_view::npos) continue;
    int port = atoi(std::string(addr.substr(colon + 1)).c_str());
    if (port > 0 && port < 65536) return port;
  }
  return 0;
}

}  // namespace

// --- model under test -------------------------------------------------------

const std::string& ModelUnderTest() { return ModelStorage(); }

void SetModelUnderTest(std::string model) { ModelStorage() = std::move(model); }

bool InitModelFromArgs(int argc, char** argv) {
  std::string model;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.substr(0, 8) == "--model=") model = std::string(arg.substr(8));
  }
  if (model.empty()) {
    if (const char* env = getenv("GEARBOX_MODEL")) model = env;
  }
  if (model.empty()) {
    fprintf(stderr,
            "integration test: no model given: pass --model=NAME or set "
            "GEARBOX_MODEL\n");
    return false;
  }
  SetModelUnderTest(model);
  return true;
}

// --- config -----------------------------------------------------------------

std::string RenderConfig(const DaemonConfig& config) {
  std::string t;
  t += "# Written by tests/integration/harness.cc\n";
  t += "[server]\n";
  t += "model = \"" + config.model + "\"\n";
  // Short enough that a stuck drain fails the test well before Bazel's timeout.
  t += "graceful_timeout = \"5s\"\n";
  t += config.server + "\n";
  t += "[[listen]]\n";
  t += "address = \"127.0.0.1:0\"\n";
  t += "protocol = \"http\"\n";
  t += "name = \"http\"\n\n";
  t += config.sections;
  if (!config.sections.empty() && config.sections.back() != '\n') t += "\n";
  if (config.default_routes) {
    t += "\n[[route]]\n"
         "path = \"/hello\"\n"
         "handler = \"text\"\n"
         "body = \"hello world\\n\"\n"
         "\n[[route]]\n"
         "path = \"/sleep\"\n"
         "handler = \"wait\"\n"
         "ms = 1\n"
         "max_ms = 10000\n"
         "\n[[route]]\n"
         "path = \"/echo\"\n"
         "handler = \"echo\"\n"
         "\n[[route]]\n"
         "path = \"/status\"\n"
         "handler = \"status\"\n";
  }
  return t;
}

std::string GearboxdPath() { return FindGearboxd(); }

std::string TestTempDir() { return TempDir(); }

// --- Daemon -----------------------------------------------------------------

std::unique_ptr<Daemon> Daemon::Start(const DaemonConfig& config,
                                      std::string* error) {
  static std::atomic<int> counter{0};
  const std::string binary = FindGearboxd();
  if (binary.empty()) {
    *error =
        "gearboxd not found (looked for $GEARBOXD, ./daemon/gearboxd and "
        "$TEST_SRCDIR/$TEST_WORKSPACE/daemon/gearboxd)";
    return nullptr;
  }
  std::unique_ptr<Daemon> d(new Daemon());
  const std::string stem = TempDir() + "/gearbox-" + std::to_string(getpid()) +
                           "-" + std::to_string(counter.fetch_add(1));
  d->config_path_ = stem + ".toml";
  d->log_path_ = stem + ".log";
  const std::string text = RenderConfig(config);
  if (!WriteFile(d->config_path_, text)) {
    *error = "cannot write " + d->config_path_;
    return nullptr;
  }
  pid_t pid = SpawnLogged({binary, "-c", d->config_path_}, d->log_path_, error);
  if (pid < 0) return nullptr;
  d->pid_ = pid;

  std::optional<int> exited;
  std::string log;
  WaitUntil(
      [&] {
        log = d->Log();
        d->port_ = ParseListeningPort(log);
        if (d->port_ > 0) return true;
        exited = d->WaitExit(Millis(0));
        return exited.has_value();
      },
      kStartTimeout);
  if (d->port_ > 0) return d;
  if (exited) {
    *error = "gearboxd " + DescribeWaitStatus(*exited) +
             " before listening (model=" + config.model + ")\nconfig " +
             d->config_path_ + ":\n" + text + "\nlog:\n" + d->Log();
    return nullptr;
  }
  *error = "gearboxd did not log event=listening within " +
           std::to_string(kStartTimeout.count()) + " ms\nlog:\n" + log;
  return nullptr;  // the destructor stops it
}

pid_t SpawnLogged(std::vector<std::string> args, const std::string& log_path,
                  std::string* error) {
  int log_fd = open(log_path.c_str(),
                    O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    *error = Errno(("open(" + log_path + ")").c_str());
    return -1;
  }
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Everything the child needs is prepared before fork(): after it, only
  // async-signal-safe calls (this process has threads).
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    *error = Errno("fork");
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return -1;
  }
  if (pid == 0) {
    // Dies with the test process; PDEATHSIG survives exec().
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s) sigaction(s, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(argv[0], argv.data());
    const char msg[] = "integration harness: execv failed\n";
    ssize_t ignored = write(2, msg, sizeof(msg) - 1);
    (void)ignored;
    _exit(127);
  }
  close(log_fd);
  if (null_fd >= 0) close(null_fd);
  return pid;
}

Daemon::~Daemon() {
  if (pid_ <= 0 || exit_status_) return;
  kill(pid_, SIGTERM);
  if (std::optional<int> status = WaitExit(kStopTimeout)) {
    // A graceful stop must exit 0; anything else (a sanitizer report at exit,
    // a crash while draining) fails the test that owned the daemon.
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "gearboxd pid " << pid_
        << " did not exit 0 after SIGTERM: " << DescribeWaitStatus(*status)
        << "\n"
        << [&] {
             std::string log = Log();
             return log.size() > 8192 ? log.substr(log.size() - 8192) : log;
           }();
    return;
  }
  fprintf(stderr,
          "integration harness: gearboxd pid %d ignored SIGTERM for "
          "%lld ms; sending SIGKILL\n",
          static_cast<int>(pid_), static_cast<long long>(kStopTimeout.count()));
  kill(pid_, SIGKILL);
  WaitExit(kStopTimeout);
}

bool Daemon::Signal(int sig) {
  if (pid_ <= 0 || exit_status_) return false;
  return kill(pid_, sig) == 0;
}

std::optional<int> WaitChild(pid_t pid, Millis timeout) {
  std::optional<int> status;
  WaitUntil(
      [&] {
        int s = 0;
        const pid_t r = waitpid(pid, &s, WNOHANG);
        if (r == pid) status = s;
        // Reaped, or not our child: nothing to wait for.
        return r == pid || (r < 0 && errno != EINTR);
      },
      timeout);
  return status;
}

std::optional<int> Daemon::WaitExit(Millis timeout) {
  if (exit_status_) return exit_status_;
  if (pid_ <= 0) return std::nullopt;
  exit_status_ = WaitChild(pid_, timeout);
  return exit_status_;
}

std::string Daemon::Log() const { return ReadFile(log_path_); }

std::string WaitForLog(const Daemon& daemon, std::string_view needle,
                       Millis timeout) {
  std::string log;
  WaitUntil(
      [&] {
        log = daemon.Log();
        return log.find(needle) != std::string::npos;
      },
      timeout);
  return log;
}

std::string StatusJson(int port) {
  HttpResponse r = Exchange(port, GetRequest("/status"), kIoTimeout);
  if (!r.error.empty() || r.status != 200) return "";
  return r.body;
}

long long FigureAfter(const std::string& text, const std::string& opener,
                      const std::string& key, char closer) {
  const size_t at = text.find(opener);
  if (at == std::string::npos) return -1;
  const size_t end = text.find(closer, at);
  const size_t k = text.find(key, at);
  if (k == std::string::npos || k > end) return -1;
  return atoll(text.c_str() + k + key.size());
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) {
    return "exited with " + std::to_string(WEXITSTATUS(status));
  }
  if (WIFSIGNALED(status)) {
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "wait status " + std::to_string(status);
}

}  // namespace gearbox::testing
