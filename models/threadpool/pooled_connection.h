// A threadpool connection: the blocking driver's connection, and where it
// sits while parked (ParkedSet). One allocation per connection, as for any
// blocking connection: the expiry index's node is kept between stays, so
// parking allocates nothing after the first.
#pragma once

#include <cstdint>
#include <map>

#include "models/blocking_connection.h"

namespace gearbox {

struct PooledConnection : BlockingConnection {
  using BlockingConnection::BlockingConnection;

  using ParkIndex = std::multimap<Clock::time_point, PooledConnection*>;
  // Its entry in the expiry index while parked, and the node kept between
  // stays.
  ParkIndex::iterator park_entry;
  ParkIndex::node_type park_node;
  uint32_t park_slot = 0;   // its ParkedSet slot while its fd is in the set
  bool registered = false;  // its fd is in the epoll set
};

}  // namespace gearbox
