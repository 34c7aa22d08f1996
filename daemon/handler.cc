#include "daemon/handler.h"

#include <cstdlib>

namespace gearbox {

Step Step::WaitFds(std::initializer_list<FdWait> fds,
                   std::chrono::microseconds timeout) {
  if (fds.size() > kMaxWaitFds) abort();  // a handler bug, not a client's
  Step s;
  s.kind = Kind::kFds;
  s.timeout = timeout;
  for (const FdWait& f : fds) {
    s.fds[s.nfds] = f;
    s.fds[s.nfds].ready = 0;
    ++s.nfds;
  }
  return s;
}

}  // namespace gearbox
