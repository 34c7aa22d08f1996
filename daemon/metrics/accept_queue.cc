#include "daemon/metrics/accept_queue.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace gearbox {
namespace {
constexpr int kTcpListenState =
    10;  // TCP_LISTEN in the kernel's state numbering
}

AcceptQueueProbe::AcceptQueueProbe() = default;

AcceptQueueProbe::~AcceptQueueProbe() {
  if (netlink_fd_ >= 0) close(netlink_fd_);
}

int64_t AcceptQueueProbe::Length(int listen_fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return -1;
  if (ss.ss_family == AF_UNIX) return UnixLength(listen_fd);
  tcp_info info{};
  socklen_t info_len = sizeof(info);
  if (getsockopt(listen_fd, IPPROTO_TCP, TCP_INFO, &info, &info_len) != 0)
    return -1;
  return info.tcpi_unacked;
}

int64_t AcceptQueueProbe::UnixLength(int listen_fd) {
  struct stat st;
  if (fstat(listen_fd, &st) != 0) return -1;
  if (netlink_fd_ < 0) {
    netlink_fd_ =
        socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (netlink_fd_ < 0) return -1;
  }
  struct {
    nlmsghdr nlh;
    unix_diag_req req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST;
  msg.req.sdiag_family = AF_UNIX;
  msg.req.udiag_states = 1u << kTcpListenState;
  msg.req.udiag_ino = static_cast<uint32_t>(st.st_ino);
  msg.req.udiag_show = UDIAG_SHOW_RQLEN;
  msg.req.udiag_cookie[0] = msg.req.udiag_cookie[1] = ~0u;  // "no cookie"
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(netlink_fd_, &msg, sizeof(msg), 0,
             reinterpret_cast<sockaddr*>(&kernel), sizeof(kernel)) < 0) {
    return -1;
  }
  alignas(nlmsghdr) char buf[8192];
  ssize_t n = recv(netlink_fd_, buf, sizeof(buf), 0);
  if (n <= 0) return -1;
  for (auto* h = reinterpret_cast<nlmsghdr*>(buf);
       NLMSG_OK(h, static_cast<size_t>(n)); h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE) return -1;
    auto* diag = static_cast<unix_diag_msg*>(NLMSG_DATA(h));
    int attr_len = static_cast<int>(h->nlmsg_len - NLMSG_LENGTH(sizeof(*diag)));
    for (auto* a = reinterpret_cast<rtattr*>(diag + 1); RTA_OK(a, attr_len);
         a = RTA_NEXT(a, attr_len)) {
      if (a->rta_type == UNIX_DIAG_RQLEN) {
        unix_diag_rqlen rq;
        memcpy(&rq, RTA_DATA(a), sizeof(rq));
        return rq
            .udiag_rqueue;  // for a listener: connections waiting in accept()
      }
    }
  }
  return -1;
}

}  // namespace gearbox
