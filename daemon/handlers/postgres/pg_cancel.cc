#include "daemon/handlers/postgres/pg_cancel.h"

#include <pthread.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "daemon/logging.h"

namespace gearbox::postgres {
namespace {

// More cancels than this waiting means the server does not answer them: a
// cancel then adds nothing to closing the connection.
constexpr size_t kMaxQueued = 256;

struct Cancel {
  PGcancel* cancel;
  std::string route;
};

class Canceller {
 public:
  bool Push(Cancel cancel) {
    std::lock_guard lock(mu_);
    if (queue_.size() >= kMaxQueued) return false;
    queue_.push_back(std::move(cancel));
    ready_.notify_one();
    return true;
  }

  void Run() {
    for (;;) {
      Cancel next;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [this] { return !queue_.empty(); });
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      char error[256] = "";
      if (!PQcancel(next.cancel, error, sizeof error)) {
        LogWarn("postgres_cancel_failed", "route={} error={}",
                LogQuote(next.route), LogQuote(error));
      }
      PQfreeCancel(next.cancel);
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Cancel> queue_;
};

// This process's canceller, started on first use. A prefork child starts
// its own (a thread does not survive fork). Never destroyed: its thread
// runs until the process exits.
Canceller* ThisProcess() {
  static std::mutex mu;
  // A fork (a prefork generation after a threadpool one, in one process)
  // while another thread holds mu would leave the child's copy locked.
  [[maybe_unused]] static const int registered = pthread_atfork(
      [] { mu.lock(); }, [] { mu.unlock(); }, [] { mu.unlock(); });
  static Canceller* canceller = nullptr;
  static pid_t owner = 0;
  std::lock_guard lock(mu);
  if (!canceller || owner != getpid()) {
    canceller = new Canceller;
    owner = getpid();
    std::thread(&Canceller::Run, canceller).detach();
  }
  return canceller;
}

}  // namespace

bool CancelInBackground(PGconn* conn, const std::string& route) {
  PGcancel* cancel = PQgetCancel(conn);
  if (!cancel) return false;
  if (ThisProcess()->Push({cancel, route})) return true;
  PQfreeCancel(cancel);
  return false;
}

}  // namespace gearbox::postgres
