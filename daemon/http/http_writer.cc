#include "daemon/http/http_writer.h"

#include <charconv>
#include <ctime>

namespace gearbox {
namespace {

void AppendNumber(std::string& out, uint64_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), n);
  out.append(buf, end);
}

void AppendStatusLine(std::string& out, int status) {
  out.append("HTTP/1.1 ");
  AppendNumber(out, static_cast<uint64_t>(status));
  out.push_back(' ');
  out.append(ReasonPhrase(status));
  out.append("\r\nServer: gearbox\r\n");
  out.append(CachedDateHeader());
}

}  // namespace

std::string_view CachedDateHeader() {
  // One strftime per second per thread instead of one per response.
  thread_local time_t cached_second = 0;
  thread_local char buf[64];
  thread_local size_t len = 0;
  time_t now = time(nullptr);  // vDSO: no syscall
  if (now != cached_second) {
    cached_second = now;
    struct tm tm;
    gmtime_r(&now, &tm);
    len =
        strftime(buf, sizeof(buf), "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
  }
  return std::string_view(buf, len);
}

bool AppendHttpResponse(const Request& request, const Response& response,
                        bool close, std::string& out) {
  close = close || response.close || !request.keep_alive;
  AppendStatusLine(out, response.status);
  const bool bodiless =
      response.status == 204 || response.status == 304 || response.status < 200;
  if (!bodiless) {
    out.append("Content-Type: ");
    out.append(response.content_type);
    out.append("\r\nContent-Length: ");
    AppendNumber(out, response.body.size());
    out.append("\r\n");
  }
  out.append(response.extra_headers);
  if (close) {
    out.append("Connection: close\r\n");
  } else if (request.version_minor == 0) {
    out.append("Connection: keep-alive\r\n");
  }
  out.append("\r\n");
  if (!request.is_head && !bodiless) out.append(response.body);
  return close;
}

void AppendHttpError(int status, std::string_view extra_headers,
                     std::string& out) {
  AppendStatusLine(out, status);
  std::string_view reason = ReasonPhrase(status);
  out.append("Content-Type: text/plain\r\nContent-Length: ");
  AppendNumber(out, reason.size() + 1);
  out.append("\r\n");
  out.append(extra_headers);
  out.append("Connection: close\r\n\r\n");
  out.append(reason);
  out.push_back('\n');
}

}  // namespace gearbox
