// Fetching a running gearboxd's /status for `gearboxd --advise`: a minimal,
// bounded HTTP/1.1 GET over TCP or a unix socket (Connection: close).
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace gearbox::advisor {

// Where a daemon's status is: a socket address as [[listen]] writes it
// ("HOST:PORT", "[::1]:PORT", "unix:/path") and the HTTP path of its status
// route.
struct StatusTarget {
  std::string address;
  std::string path = "/status";
};

// "http://HOST:PORT[/PATH]" or "unix:/path/to.sock" (the socket's file; the
// HTTP path stays "/status"). Empty `error` on success.
struct ParsedUrl {
  StatusTarget target;
  std::string error;
};
ParsedUrl ParseAdviseUrl(std::string_view url);

// The address a client connects to for a [[listen]] address: a wildcard host
// ("*", "0.0.0.0", "[::]", empty) becomes the loopback address.
std::string ConnectAddress(std::string_view listen_address);

struct FetchResult {
  std::string body;   // the response body of a 200
  std::string error;  // non-empty: what failed, naming the call and address
};
// GET `target.path` + `query` with every step bounded by `timeout`.
FetchResult FetchStatus(const StatusTarget& target, std::string_view query,
                        std::chrono::milliseconds timeout);

}  // namespace gearbox::advisor
