// IPv4 TCP sockets as the kernel lists them (/proc/net/tcp), for tests that
// wait until a server has accepted, read or closed a connection: what the
// peer did, seen from outside, with no request of the test's own.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace gearbox::testing {

struct TcpSocket {
  int state = 0;  // TCP_ESTABLISHED, TCP_CLOSE_WAIT, TCP_LISTEN, ...
  int local_port = 0, remote_port = 0;
  // Bytes not yet acknowledged / not yet read by the owner. For a listener,
  // rx_queue is the number of connections waiting in its accept queue.
  uint32_t tx_queue = 0, rx_queue = 0;
  // The socket's inode: /proc/PID/fd/N links to "socket:[inode]" in every
  // process that has it open.
  uint64_t inode = 0;
};
std::vector<TcpSocket> TcpSockets();

// The two ports of a client's connection: the server's, and the client's own.
struct TcpPorts {
  int server = 0, client = 0;
};
// getpeername/getsockname of a connected client socket ({0, 0} on error).
TcpPorts PortsOf(int client_fd);

// The server's end of the client connection `ports`, or nullopt when the
// kernel no longer lists it.
std::optional<TcpSocket> ServerEnd(TcpPorts ports);
// True while the server still holds its end open: ESTABLISHED (accepted or
// waiting to be) or CLOSE_WAIT (the client has closed, the server not yet).
bool ServerHolds(TcpPorts ports);
// The process among `pids` whose descriptor table holds the server's end of
// `ports`, or -1 when none does (closed, or in flight between processes): a
// prefork child that holds a client's connection, seen from outside.
pid_t ServerEndOwner(TcpPorts ports, const std::vector<pid_t>& pids);
// How many ends of connections to `port` the server holds open.
int ServerHeldEnds(int port);
// Connections waiting in the accept queue of the listener on `port`, or -1
// when nothing listens there.
int AcceptQueue(int port);

}  // namespace gearbox::testing
