#include "tests/integration/systemd/activated_daemon.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tests/integration/harness.h"

namespace gearbox::testing {
namespace {

constexpr Millis kWrapperTimeout{
    5000};  // until systemd-socket-activate listens

std::string Errno(const std::string& call) {
  return call + ": " + strerror(errno);
}

bool Executable(const std::string& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0;
}

std::string Absolute(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// gearboxd from the runfiles (same search as the base harness), absolute
// because systemd-socket-activate exec()s it by name.
std::string FindGearboxd() {
  if (const char* env = getenv("GEARBOXD"); env && Executable(env))
    return Absolute(env);
  if (Executable("daemon/gearboxd")) return Absolute("daemon/gearboxd");
  for (const char* root_var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    const char* root = getenv(root_var);
    if (!root || !*root) continue;
    const char* ws = getenv("TEST_WORKSPACE");
    std::string path = std::string(root) + "/" + (ws && *ws ? ws : "gearbox") +
                       "/daemon/gearboxd";
    if (Executable(path)) return Absolute(path);
  }
  return "";
}

std::string FindSocketActivate() {
  for (const char* p :
       {"/usr/bin/systemd-socket-activate", "/bin/systemd-socket-activate",
        "/lib/systemd/systemd-activate"}) {
    if (Executable(p)) return p;
  }
  return "";
}

// Config and log files: Bazel's undeclared test outputs when available (kept
// after the run, in test.outputs/), else $TEST_TMPDIR.
std::string FileDir() {
  for (const char* var : {"TEST_UNDECLARED_OUTPUTS_DIR", "TEST_TMPDIR"}) {
    const char* t = getenv(var);
    if (t && *t) return t;
  }
  return "/tmp";
}

// Sockets need a short directory: sun_path is 108 bytes with the NUL, and
// Bazel's $TEST_TMPDIR often leaves too little room. Falls back to a private
// /tmp/gbx-XXXXXX, removed at exit (the sockets in it are unlinked by their
// owners first).
class ShortDirectory {
 public:
  ShortDirectory() {
    const char* t = getenv("TEST_TMPDIR");
    if (t && *t && strlen(t) + 24 < sizeof(sockaddr_un::sun_path)) {
      path_ = t;
      return;
    }
    char tmpl[] = "/tmp/gbx-XXXXXX";
    if (const char* made = mkdtemp(tmpl)) {
      path_ = made;
      owned_ = true;
    } else {
      path_ = "/tmp";
    }
  }
  ~ShortDirectory() {
    if (owned_) rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_ = false;
};

const std::string& SocketDir() {
  static const ShortDirectory dir;
  return dir.path();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return false;
  }
  return rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace

// --- NotifyMessage / NotifySocket --------------------------------------------

std::optional<std::string> NotifyMessage::Field(std::string_view key) const {
  std::string_view t = text;
  while (!t.empty()) {
    size_t eol = t.find('\n');
    std::string_view line = t.substr(0, eol);
    if (line.size() > key.size() && line.substr(0, key.size()) == key &&
        line[key.size()] == '=') {
      return std::string(line.substr(key.size() + 1));
    }
    if (eol == std::string_view::npos) break;
    t.remove_prefix(eol + 1);
  }
  return std::nullopt;
}

std::unique_ptr<NotifySocket> NotifySocket::Bind(const std::string& path,
                                                 std::string* error) {
  std::unique_ptr<NotifySocket> s(new NotifySocket());
  s->path_ = path;
  sockaddr_un sun{};
  sun.sun_family = AF_UNIX;
  if (path.size() >= sizeof(sun.sun_path)) {
    *error = "notify socket path too long: " + path;
    return nullptr;
  }
  memcpy(sun.sun_path, path.data(), path.size());
  unlink(path.c_str());
  s->fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s->fd_ < 0) {
    *error = Errno("socket(AF_UNIX, SOCK_DGRAM)");
    return nullptr;
  }
  if (bind(s->fd_, reinterpret_cast<sockaddr*>(&sun), sizeof(sun)) != 0) {
    *error = Errno("bind(" + path + ")");
    return nullptr;
  }
  s->thread_ = std::thread([p = s.get()] { p->Run(); });
  return s;
}

NotifySocket::~NotifySocket() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
  unlink(path_.c_str());
}

void NotifySocket::Run() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) continue;
    NotifyMessage m{SteadyClock::now(),
                    std::string(buf, static_cast<size_t>(n))};
    {
      std::lock_guard<std::mutex> lock(mu_);
      messages_.push_back(std::move(m));
    }
    cv_.notify_all();
  }
}

size_t NotifySocket::Count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return messages_.size();
}

std::vector<NotifyMessage> NotifySocket::Messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return messages_;
}

std::optional<NotifyMessage> NotifySocket::WaitFor(
    size_t from, const std::function<bool(const NotifyMessage&)>& match,
    Millis timeout, size_t* index) const {
  const auto deadline = SteadyClock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  size_t next = from;
  for (;;) {
    for (; next < messages_.size(); ++next) {
      if (match(messages_[next])) {
        if (index) *index = next;
        return messages_[next];
      }
    }
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout &&
        next >= messages_.size()) {
      return std::nullopt;
    }
  }
}

std::string NotifySocket::Dump() const {
  std::vector<NotifyMessage> all = Messages();
  std::string out;
  for (const NotifyMessage& m : all) {
    auto ms = std::chrono::duration_cast<Millis>(m.at - all.front().at).count();
    std::string text = m.text;
    std::replace(text.begin(), text.end(), '\n', '|');
    out += "  +" + std::to_string(ms) + "ms " + text + "\n";
  }
  return out;
}

// --- config
// -------------------------------------------------------------------

std::string RenderActivatedConfig(const ActivatedOptions& o,
                                  const std::string& socket_path) {
  std::string t;
  t += "# Written by tests/integration/systemd/activated_daemon.cc\n";
  t += "[server]\n";
  t += "model = \"" + o.model + "\"\n";
  t += "graceful_timeout = \"" + o.graceful_timeout + "\"\n\n";
  t += "[[listen]]\n";
  t += "address = \"unix:" + socket_path + "\"\n";
  t += "protocol = \"http\"\n";
  t += "name = \"" + o.listen_name + "\"\n\n";
  t += o.sections;
  if (!o.sections.empty() && o.sections.back() != '\n') t += "\n";
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
       "path = \"/status\"\n"
       "handler = \"status\"\n";
  return t;
}

// --- ActivatedDaemon
// -----------------------------------------------------------

std::unique_ptr<ActivatedDaemon> ActivatedDaemon::Start(
    const ActivatedOptions& options, std::string* error) {
  static std::atomic<int> counter{0};
  const std::string gearboxd = FindGearboxd();
  if (gearboxd.empty()) {
    *error = "gearboxd not found in the runfiles (daemon/gearboxd)";
    return nullptr;
  }
  const std::string activate = FindSocketActivate();
  if (activate.empty()) {
    *error =
        "systemd-socket-activate not found (Debian's systemd package ships "
        "/usr/bin/systemd-socket-activate)";
    return nullptr;
  }
  std::unique_ptr<ActivatedDaemon> d(new ActivatedDaemon());
  const std::string name = std::to_string(getpid() % 100000) + "-" +
                           std::to_string(counter.fetch_add(1));
  d->socket_path_ = SocketDir() + "/" + name + ".sock";
  d->config_path_ = FileDir() + "/gearbox-" + name + ".toml";
  d->log_path_ = FileDir() + "/gearbox-" + name + ".log";
  d->notify_ = NotifySocket::Bind(SocketDir() + "/" + name + ".notify", error);
  if (!d->notify_) return nullptr;
  unlink(d->socket_path_.c_str());
  if (!d->WriteConfig(RenderActivatedConfig(options, d->socket_path_))) {
    *error = "cannot write " + d->config_path_;
    return nullptr;
  }
  std::vector<std::string> args = {activate,
                                   "-l",
                                   d->socket_path_,
                                   "--fdname=" + options.fdname,
                                   "-E",
                                   "NOTIFY_SOCKET=" + d->notify_->path(),
                                   gearboxd,
                                   "-c",
                                   d->config_path_};
  pid_t pid = SpawnLogged(std::move(args), d->log_path_, error);
  if (pid < 0) return nullptr;
  d->pid_ = pid;

  bool listening = false;
  std::optional<int> exited;
  WaitUntil(
      [&] {
        struct stat st;
        listening = d->Log().find("Listening on") != std::string::npos &&
                    stat(d->socket_path_.c_str(), &st) == 0 &&
                    S_ISSOCK(st.st_mode);
        if (!listening) exited = d->WaitExit(Millis(0));
        return listening || exited.has_value();
      },
      kWrapperTimeout);
  if (listening) return d;
  if (exited) {
    *error = "systemd-socket-activate exited (status " +
             std::to_string(*exited) + ") before listening\nlog:\n" + d->Log();
    return nullptr;
  }
  *error = "systemd-socket-activate did not listen on " + d->socket_path_ +
           " within 5 s\nlog:\n" + d->Log();
  return nullptr;
}

ActivatedDaemon::~ActivatedDaemon() {
  if (pid_ > 0 && !exit_status_) {
    kill(pid_, SIGTERM);
    if (!WaitExit(kStopTimeout)) {
      fprintf(
          stderr,
          "systemd test: pid %d ignored SIGTERM for 10 s; sending SIGKILL\n",
          static_cast<int>(pid_));
      kill(pid_, SIGKILL);
      WaitExit(kStopTimeout);
    }
  }
  unlink(socket_path_.c_str());  // systemd-socket-activate does not
}

bool ActivatedDaemon::Signal(int sig) {
  if (pid_ <= 0 || exit_status_) return false;
  return kill(pid_, sig) == 0;
}

std::optional<int> ActivatedDaemon::WaitExit(Millis timeout) {
  if (exit_status_) return exit_status_;
  if (pid_ <= 0) return std::nullopt;
  exit_status_ = WaitChild(pid_, timeout);
  return exit_status_;
}

std::string ActivatedDaemon::Log() const { return ReadFile(log_path_); }

bool ActivatedDaemon::WriteConfig(const std::string& text) {
  return WriteFileAtomically(config_path_, text);
}

const std::string& SocketDirectory() { return SocketDir(); }

// --- /proc
// ----------------------------------------------------------------------

ProcCounts ReadProcCounts(pid_t pid) {
  ProcCounts c;
  const std::string base = "/proc/" + std::to_string(pid);
  auto count_dir = [](const std::string& dir,
                      const std::function<void(const char*)>& each) {
    DIR* d = opendir(dir.c_str());
    if (!d) return -1;
    int n = 0;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      ++n;
      if (each) each(e->d_name);
    }
    closedir(d);
    return n;
  };
  c.threads = count_dir(base + "/task", nullptr);
  std::vector<std::pair<int, std::string>> fds;
  c.fds = count_dir(base + "/fd", [&](const char* name) {
    char target[PATH_MAX];
    std::string link = base + "/fd/" + name;
    ssize_t n = readlink(link.c_str(), target, sizeof(target) - 1);
    fds.emplace_back(atoi(name),
                     n > 0 ? std::string(target, static_cast<size_t>(n)) : "?");
  });
  std::sort(fds.begin(), fds.end());
  for (auto& [fd, target] : fds)
    c.fd_list += std::to_string(fd) + " -> " + target + "\n";
  c.children = 0;
  c.zombies = 0;
  count_dir("/proc", [&](const char* name) {
    if (name[0] < '0' || name[0] > '9') return;
    std::string stat = ReadFile(std::string("/proc/") + name + "/stat");
    size_t paren = stat.rfind(')');  // comm may contain spaces and parens
    if (paren == std::string::npos) return;
    char state = 0;
    int ppid = 0;
    if (sscanf(stat.c_str() + paren + 1, " %c %d", &state, &ppid) != 2) return;
    if (ppid != pid) return;
    ++c.children;
    if (state == 'Z') ++c.zombies;
  });
  return c;
}

std::string ProcCounts::ToString() const {
  return "threads=" + std::to_string(threads) + " fds=" + std::to_string(fds) +
         " children=" + std::to_string(children) +
         " zombies=" + std::to_string(zombies);
}

int CountLines(const std::string& log, std::string_view needle) {
  int n = 0;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t eol = log.find('\n', pos);
    if (eol == std::string::npos) eol = log.size();
    if (std::string_view(log).substr(pos, eol - pos).find(needle) !=
        std::string_view::npos)
      ++n;
    pos = eol + 1;
  }
  return n;
}

}  // namespace gearbox::testing
