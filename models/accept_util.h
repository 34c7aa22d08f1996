// accept() shared by the models: non-blocking, close-on-exec, TCP_NODELAY, and the
// reserve-descriptor trick for EMFILE (from libev/nginx practice): when the process
// is out of descriptors, free the reserve, accept and close the pending connection
// so it does not spin the event loop, then take the reserve back.
#pragma once

namespace gearbox {

class ReserveFd {
 public:
  ReserveFd();
  ~ReserveFd();
  ReserveFd(const ReserveFd&) = delete;
  ReserveFd& operator=(const ReserveFd&) = delete;
  // Closes the reserve so one descriptor is free; Restore() re-opens it.
  void Release();
  void Restore();

 private:
  int fd_ = -1;
};

// Returns the new connection's fd, or -1 when there is nothing to accept (EAGAIN) or
// the accept failed (logged, rate-limited). Never blocks.
int AcceptConnection(int listen_fd, ReserveFd& reserve);

// Counts of descriptor-exhaustion events, for tests and the stats line.
unsigned long EmfileEvents();

}  // namespace gearbox
