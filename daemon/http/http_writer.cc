#include "daemon/http/http_writer.h"

#include <algorithm>
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

// "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 5.6.7), by hand: strftime and
// gmtime_r are not async-signal-safe. Days to civil date: Howard Hinnant's
// algorithm for the proleptic Gregorian calendar.
void StampDateHeader(std::span<char> response, time_t now) {
  constexpr std::string_view kName = "\r\nDate: ";
  constexpr size_t kWidth = 29;
  const std::string_view text(response.data(), response.size());
  const size_t at = text.find(kName);
  if (at == std::string_view::npos || text.size() - at - kName.size() < kWidth)
    return;
  char* out = response.data() + at + kName.size();
  const int64_t days = now / 86400, secs = now % 86400;
  static constexpr char kDays[] = "ThuFriSatSunMonTueWed";
  static constexpr char kMonths[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
  const int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153, day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2);
  const auto two = [](char* p, int64_t v) {
    p[0] = static_cast<char>('0' + v / 10);
    p[1] = static_cast<char>('0' + v % 10);
  };
  for (int i = 0; i < 3; ++i) out[i] = kDays[(days % 7) * 3 + i];
  out[3] = ',';
  out[4] = ' ';
  two(out + 5, day);
  out[7] = ' ';
  for (int i = 0; i < 3; ++i) out[8 + i] = kMonths[(month - 1) * 3 + i];
  out[11] = ' ';
  two(out + 12, year / 100);
  two(out + 14, year % 100);
  out[16] = ' ';
  two(out + 17, secs / 3600);
  out[19] = ':';
  two(out + 20, secs / 60 % 60);
  out[22] = ':';
  two(out + 23, secs % 60);
  std::copy_n(" GMT", 4, out + 25);
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
