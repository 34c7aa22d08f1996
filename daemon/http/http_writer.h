// HTTP/1.1 response serialization: Response -> bytes appended to an output
// buffer.
#pragma once

#include <ctime>
#include <span>
#include <string>
#include <string_view>

#include "daemon/request.h"
#include "daemon/response.h"

namespace gearbox {

// Appends the response to `out`. HEAD gets headers only; HTTP/1.0 keep-alive
// gets "Connection: keep-alive"; `close` gets "Connection: close". Returns true
// when the connection must close after this response.
bool AppendHttpResponse(const Request& request, const Response& response,
                        bool close, std::string& out);

// Answer to input that never became a request (400, 408, 413, 431, 505,
// 503...): always "Connection: close".
void AppendHttpError(int status, std::string_view extra_headers,
                     std::string& out);

inline constexpr std::string_view kHttpContinue =
    "HTTP/1.1 100 Continue\r\n\r\n";

// "Date: <IMF-fixdate>\r\n", formatted at most once per second per thread.
std::string_view CachedDateHeader();

// Rewrites the value of the Date header in a rendered response head to `now`
// (the same width). Async-signal-safe: no locale, no allocation.
void StampDateHeader(std::span<char> response, time_t now);

}  // namespace gearbox
