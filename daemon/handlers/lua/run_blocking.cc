#include "daemon/handlers/lua/run_blocking.h"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cerrno>

namespace gearbox::lua {
namespace {

using Clock = std::chrono::steady_clock;

int PollMs(std::chrono::microseconds d) {
  return static_cast<int>(std::max<int64_t>(0, (d.count() + 999) / 1000));
}

Wake PollFds(const Step& step, Clock::time_point until) {
  pollfd fds[kMaxWaitFds];
  for (size_t i = 0; i < step.nfds; ++i) {
    fds[i] = {step.fds[i].fd, 0, 0};
    if (step.fds[i].events & kFdReadable) fds[i].events |= POLLIN;
    if (step.fds[i].events & kFdWritable) fds[i].events |= POLLOUT;
  }
  Wake wake;
  wake.nfds = step.nfds;
  wake.fds = step.fds;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
        until - Clock::now());
    const int n = poll(fds, step.nfds, PollMs(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      wake.why = Wake::Why::kDeadline;
      return wake;
    }
    wake.why = Wake::Why::kFdsReady;
    for (size_t i = 0; i < step.nfds; ++i) {
      uint8_t ready = 0;
      if (fds[i].revents & POLLIN) ready |= kFdReadable;
      if (fds[i].revents & POLLOUT) ready |= kFdWritable;
      if (fds[i].revents & (POLLERR | POLLHUP | POLLNVAL)) ready |= kFdError;
      wake.fds[i].ready = ready;
    }
    return wake;
  }
}

}  // namespace

bool RunBlocking(Exchange& exchange, Response& response,
                 std::chrono::microseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  Step step = exchange.Resume(Wake{}, response);
  while (!step.done()) {
    const Clock::time_point wait_end =
        std::min(deadline, Clock::now() + step.timeout);
    Wake wake;
    if (step.kind == Step::Kind::kTimer) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
          wait_end - Clock::now());
      if (ns.count() > 0) {
        timespec ts{static_cast<time_t>(ns.count() / 1000000000),
                    static_cast<long>(ns.count() % 1000000000)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
      }
      wake.why = Wake::Why::kTimer;
    } else {
      wake = PollFds(step, wait_end);
    }
    if (Clock::now() >= deadline) return false;
    step = exchange.Resume(wake, response);
  }
  return true;
}

}  // namespace gearbox::lua
