// What a handler fills in; a codec turns it into bytes.
#pragma once

#include <string>
#include <string_view>

namespace gearbox {

struct Response {
  int status = 200;
  // Must outlive the response: a literal or a string owned by the handler.
  std::string_view content_type = "text/plain";
  std::string body;  // reused across requests (clear() keeps its capacity)
  // Extra preformatted header lines, each "Name: value\r\n" (e.g. Retry-After).
  std::string extra_headers;
  bool close =
      false;  // ask the codec to close the connection after this response
  // The handler failed (a Lua runtime error, a module's malformed answer):
  // counted per route as handler_errors, whatever the status says.
  bool handler_error = false;

  void Reset() {
    status = 200;
    content_type = "text/plain";
    body.clear();
    extra_headers.clear();
    close = false;
    handler_error = false;
  }
};

// Standard reason phrase ("OK", "Not Found", ...); "Unknown" for others.
std::string_view ReasonPhrase(int status);

}  // namespace gearbox
