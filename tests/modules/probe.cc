// probe: a test module written with the C++ layer (gearbox/module.hpp, built
// as C++17). It reports what the module sees and does:
//   GET /probe?...         "method=... path=... query=... header=... body=..."
//                          plus "pid=... tid=... instance=... count=N
//                          same_thread=1|0" (count: requests this instance
//                          served; same_thread: worker_init ran on the thread
//                          that serves).
//   ?status=N              answers with status N
//   ?wait=timer|deadline|writable|readable
//                          one wait of that kind first; the body's wakes= line
//                          lists the wakes it saw ("start,timer", ...) and
//                          the fds a ready wake named ("ready+1r": fd #1
//                          readable). readable waits on two pipes, only the
//                          second of which has a byte.
//   ?crash=1               aborts the process (a crashing module)
//   ?log=1                 one info line through gearboxd's logger
// Route keys: greeting (string, default "hi"; "bad" is rejected with
// route_error), fail (bool: create() fails without a reason).
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <gearbox/module.hpp>
#include <memory>
#include <string>

namespace {

using gearbox::sdk::Exchange;
using gearbox::sdk::Request;
using gearbox::sdk::Response;
using gearbox::sdk::Route;
using gearbox::sdk::Step;

long Tid() { return static_cast<long>(syscall(SYS_gettid)); }

struct Probe;

struct ProbeInstance {
  ProbeInstance(const Probe& probe, const gearbox_worker& worker);
  ~ProbeInstance();
  std::unique_ptr<Exchange> Start(const Request& request);

  const Probe& probe;
  const int worker;
  const long init_tid = Tid();
  long count = 0;
};

struct Probe {
  using Instance = ProbeInstance;
  std::string greeting;

  static std::unique_ptr<Probe> Create(Route& route) {
    auto probe = std::make_unique<Probe>();
    probe->greeting = std::string(route.String("greeting", "hi"));
    if (route.Bool("fail", false)) return nullptr;
    if (probe->greeting == "bad")
      route.Error("greeting", "\"bad\" is no greeting");
    return probe;
  }
};

ProbeInstance::ProbeInstance(const Probe& p, const gearbox_worker& w)
    : probe(p), worker(w.index) {
  gearbox::sdk::Log(GEARBOX_LOG_INFO, "probe_worker_init",
                    "worker_index=" + std::to_string(w.index));
}

ProbeInstance::~ProbeInstance() {
  gearbox::sdk::Log(GEARBOX_LOG_INFO, "probe_worker_exit",
                    "served=" + std::to_string(count));
}

// Waits once (of the kind asked for), then answers.
class ProbeExchange final : public Exchange {
 public:
  ProbeExchange(std::string text, int status, std::string wait)
      : text_(std::move(text)), status_(status), wait_(std::move(wait)) {}
  ~ProbeExchange() override {
    for (int fd : {pipe_[0], pipe_[1], other_[0], other_[1]}) {
      if (fd >= 0) close(fd);
    }
  }

  Step Resume(const gearbox_wake& wake, Response& response) override {
    static const char* kWhy[] = {"start", "timer", "ready", "deadline"};
    wakes_ += std::string(wakes_.empty() ? "" : ",") +
              (wake.why < 4 ? kWhy[wake.why] : "?");
    if (wake.why == GEARBOX_WAKE_FDS_READY) {
      for (uint32_t i = 0; i < wake.nfds; ++i) {
        const std::string fd = "+" + std::to_string(i);
        if (gearbox_wake_ready(&wake, i, GEARBOX_FD_READABLE))
          wakes_ += fd + "r";
        if (gearbox_wake_ready(&wake, i, GEARBOX_FD_WRITABLE))
          wakes_ += fd + "w";
      }
    }
    if (wake.why == GEARBOX_WAKE_START && !wait_.empty()) {
      if (wait_ == "timer") return Step::Timer(20000);
      if (pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return Answer(response);
      if (wait_ == "deadline") {  // nobody writes: the deadline ends it
        return Step::Fds(30000, {{pipe_[0], GEARBOX_FD_READABLE}});
      }
      if (wait_ == "writable") {  // an empty pipe is writable at once
        return Step::Fds(5000000, {{pipe_[1], GEARBOX_FD_WRITABLE}});
      }
      if (wait_ == "readable") {  // only the second pipe has a byte
        if (pipe2(other_, O_CLOEXEC | O_NONBLOCK) != 0 ||
            write(pipe_[1], "x", 1) != 1) {
          return Answer(response);
        }
        return Step::Fds(5000000, {{other_[0], GEARBOX_FD_READABLE},
                                   {pipe_[0], GEARBOX_FD_READABLE}});
      }
    }
    return Answer(response);
  }

 private:
  Step Answer(Response& response) {
    response.Status(status_);
    response.Header("Content-Type", "text/x-probe");
    response.Header("X-Probe-Reserved", response.Header("Content-Length", "1")
                                            ? "accepted"
                                            : "refused");
    response.Body(text_);
    response.Append("wakes=" + wakes_ + "\n");
    return Step::Done();
  }

  std::string text_;
  int status_;
  std::string wait_;
  std::string wakes_;
  int pipe_[2] = {-1, -1};
  int other_[2] = {-1, -1};
};

std::unique_ptr<Exchange> ProbeInstance::Start(const Request& request) {
  if (request.Query("crash") == "1") abort();
  ++count;
  if (request.Query("log") == "1") {
    gearbox::sdk::Log(GEARBOX_LOG_INFO, "probe_request",
                      "count=" + std::to_string(count));
  }
  std::string text = probe.greeting + "\n";
  text += "method=" + std::string(request.method()) +
          " path=" + std::string(request.path()) +
          " query=" + std::string(request.query()) +
          " header=" + std::string(request.Header("x-probe")) +
          " body=" + std::string(request.body()) + "\n";
  char instance[32];
  snprintf(instance, sizeof instance, "%p", static_cast<void*>(this));
  text += "worker=" + std::to_string(worker) +
          " pid=" + std::to_string(getpid()) + " tid=" + std::to_string(Tid()) +
          " instance=" + instance + " count=" + std::to_string(count) +
          " same_thread=" + (Tid() == init_tid ? "1" : "0") + "\n";
  const std::string_view status = request.Query("status");
  const int code = status.empty() ? 200 : atoi(std::string(status).c_str());
  return std::make_unique<ProbeExchange>(std::move(text), code,
                                         std::string(request.Query("wait")));
}

}  // namespace

GEARBOX_CXX_MODULE(Probe, "probe")
