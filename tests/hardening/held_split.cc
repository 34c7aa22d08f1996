#include "tests/hardening/held_split.h"

#include <algorithm>

#include "tests/support/tcp_state.h"

namespace gearbox::hardening {

long HeldSplit::Holds(pid_t child) const {
  return std::count(holder.begin(), holder.end(), child);
}

size_t HeldSplit::FirstOf(pid_t child) const {
  return static_cast<size_t>(std::find(holder.begin(), holder.end(), child) -
                             holder.begin());
}

HeldSplit SplitOf(const std::vector<gearbox::testing::Connection>& conns,
                  const std::vector<pid_t>& children) {
  HeldSplit split;
  for (const gearbox::testing::Connection& c : conns) {
    split.holder.push_back(gearbox::testing::ServerEndOwner(
        gearbox::testing::PortsOf(c.fd()), children));
  }
  if (children.size() != 2) return split;
  const bool first = split.Holds(children[0]) >= split.Holds(children[1]);
  split.most = first ? children[0] : children[1];
  split.sibling = first ? children[1] : children[0];
  return split;
}

}  // namespace gearbox::hardening
