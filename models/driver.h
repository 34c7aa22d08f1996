// The driver core: what every model does with the connection state machine's
// Interest, written once. Send what is pending (once per change of output),
// then act on the kind: process buffered requests, wait for bytes, for room
// to write, for a handler's timer or fds, close.
//
// A model supplies only primitives, its Port (Redis's split: ae.c holds the
// loop's logic once, ae_epoll.c is a page of static functions). A template,
// not an interface: the driver runs for every request of every model, and a
// Port's primitives inline into it (no virtual call, no allocation).
//
// A Port provides:
//   Clock::time_point Now();  the machine's clock (tests inject theirs)
//   int fd() const;           the client's socket
//   bool MayProcess();        kProcess: run Process() now? (false: the
//                             model takes the connection back, the driver
//                             returns)
//   bool AwaitRead(const Interest&, Clock::time_point now);
//   bool AwaitWrite(const Interest&, Clock::time_point now);
//   bool AwaitHandler(const Interest&, Clock::time_point now);
//   void Close();             kClose: close the fd and count it
// Each Await* returns true when the driver should look at the machine again
// now (a blocking model waited and told the machine what happened), false
// when it returns (an event loop armed its events; a blocking model gave the
// connection back). After AwaitWrite returns true the driver sends what is
// pending. After Close(), and after an Await* that returned false, the
// driver touches nothing: the connection may be gone. A lingering connection
// (Interest::shut_write) has its write side shut here, once, for every model.
#pragma once

#include "daemon/connection/connection.h"

namespace gearbox {

// The one send path: sends conn.pending_out() on `fd` (non-blocking) until it
// is all gone or the socket is full, and tells the machine what happened: the
// bytes that went (Sent, which counts bytes_out), a full socket
// (WriteBlocked), or a failure (PeerClosed). Nothing to send: no system call.
void SendPending(int fd, Connection& conn, Clock::time_point now);

// Interest::shut_write: the answer is out, the client gets end of file while
// its remaining bytes are still read (and dropped). A failure closes.
void ShutWrite(int fd, Connection& conn);

template <typename Port>
void Drive(Port& port, Connection& conn) {
  bool sent = false;  // one send attempt per change of output
  for (;;) {
    const Clock::time_point now = port.Now();
    const Interest i = conn.Next(now);
    if (i.write && !sent && i.kind != Interest::Kind::kWrite) {
      sent = true;
      SendPending(port.fd(), conn, now);
      continue;
    }
    sent = false;
    switch (i.kind) {
      case Interest::Kind::kProcess:
        if (!port.MayProcess()) return;
        conn.Process(now);
        break;
      case Interest::Kind::kRead:
        if (i.shut_write) {
          ShutWrite(port.fd(), conn);
          break;  // look again: a failed shutdown closes
        }
        if (!port.AwaitRead(i, now)) return;
        break;
      case Interest::Kind::kWrite:
        if (!port.AwaitWrite(i, now)) return;
        SendPending(port.fd(), conn, port.Now());
        break;
      case Interest::Kind::kHandler:
        if (!port.AwaitHandler(i, now)) return;
        break;
      case Interest::Kind::kClose:
        port.Close();
        return;
    }
  }
}

}  // namespace gearbox
