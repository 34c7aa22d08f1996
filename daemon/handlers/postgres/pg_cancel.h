// Cancelling a running query without blocking the worker. PQcancel connects
// to the server and waits for it to close (a blocking connect and read), so
// it runs on one thread per process, fed by a bounded queue (memcached's
// hand-off shape). PostgreSQL 15's libpq has no non-blocking cancel
// (PQcancelStart is 17's).
#pragma once

#include <postgresql/libpq-fe.h>

#include <string>

namespace gearbox::postgres {

// Queues a cancel request for the query running on conn. The caller may
// PQfinish(conn) at once: the request names the backend, not the
// connection. `route` is for the log line a failed cancel writes. False when
// the queue is full (the request is dropped; closing the connection still
// ends the backend the next time it writes to it).
bool CancelInBackground(PGconn* conn, const std::string& route);

}  // namespace gearbox::postgres
