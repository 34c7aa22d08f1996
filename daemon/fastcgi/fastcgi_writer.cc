#include "daemon/fastcgi/fastcgi_writer.h"

#include <algorithm>
#include <charconv>

#include "daemon/fastcgi/fastcgi_protocol.h"

namespace gearbox::fcgi {
namespace {

constexpr char kZeros[8] = {};

void AppendNumber(std::string& out, uint64_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), n);
  out.append(buf, end);
}

void AppendHead(std::string& head, int status, std::string_view content_type,
                size_t content_length, bool bodiless,
                std::string_view extra_headers) {
  // CGI (RFC 3875 6.3.3): the status travels as a "Status:" header field; nginx
  // turns it into the HTTP status line.
  head.append("Status: ");
  AppendNumber(head, static_cast<uint64_t>(status));
  head.push_back(' ');
  head.append(ReasonPhrase(status));
  head.append("\r\n");
  if (!bodiless) {
    head.append("Content-Type: ");
    head.append(content_type);
    head.append("\r\nContent-Length: ");
    AppendNumber(head, content_length);
    head.append("\r\n");
  }
  head.append(extra_headers);
  head.append("\r\n");
}

void AppendEnd(std::string& out, uint16_t request_id) {
  AppendRecord(out, kStdout, request_id, {});
  AppendEndRequest(out, request_id, 0, kRequestComplete);
}

}  // namespace

void AppendRecord(std::string& out, uint8_t type, uint16_t request_id,
                  std::string_view content) {
  content =
      content.substr(0, kMaxContent);  // callers stay below; never overflow
  const uint8_t padding = PaddingFor(content.size());
  AppendHeader(out, type, request_id, static_cast<uint16_t>(content.size()),
               padding);
  out.append(content);
  out.append(kZeros, padding);
}

void AppendStream(std::string& out, uint8_t type, uint16_t request_id,
                  std::string_view a, std::string_view b) {
  size_t left = a.size() + b.size();
  // One reservation for all records: headers and padding add <= 16 per record.
  out.reserve(out.size() + left + (left / kMaxContent + 1) * 16);
  while (left > 0) {
    const size_t n = std::min(left, kMaxContent);
    const uint8_t padding = PaddingFor(n);
    AppendHeader(out, type, request_id, static_cast<uint16_t>(n), padding);
    const size_t from_a = std::min(n, a.size());
    out.append(a.substr(0, from_a));
    a.remove_prefix(from_a);
    out.append(b.substr(0, n - from_a));
    b.remove_prefix(n - from_a);
    out.append(kZeros, padding);
    left -= n;
  }
}

void AppendEndRequest(std::string& out, uint16_t request_id,
                      uint32_t app_status, uint8_t protocol_status) {
  const char body[8] = {
      static_cast<char>(app_status >> 24),
      static_cast<char>((app_status >> 16) & 0xff),
      static_cast<char>((app_status >> 8) & 0xff),
      static_cast<char>(app_status & 0xff),
      static_cast<char>(protocol_status),
      0,
      0,
      0,
  };
  AppendRecord(out, kEndRequest, request_id, std::string_view(body, 8));
}

void AppendUnknownType(std::string& out, uint8_t type) {
  const char body[8] = {static_cast<char>(type), 0, 0, 0, 0, 0, 0, 0};
  AppendRecord(out, fcgi::kUnknownType, kNullRequestId,
               std::string_view(body, 8));
}

void AppendResponseRecords(std::string& out, std::string& scratch,
                           uint16_t request_id, const Response& response,
                           bool is_head) {
  const bool bodiless =
      response.status == 204 || response.status == 304 || response.status < 200;
  scratch.clear();
  AppendHead(scratch, response.status, response.content_type,
             response.body.size(), bodiless, response.extra_headers);
  const bool send_body = !is_head && !bodiless;
  AppendStream(
      out, kStdout, request_id, scratch,
      send_body ? std::string_view(response.body) : std::string_view());
  AppendEnd(out, request_id);
}

void StampRequestId(std::span<char> records, uint16_t request_id) {
  size_t at = 0;
  while (records.size() - at >= kHeaderSize) {
    auto* header = reinterpret_cast<unsigned char*>(records.data() + at);
    header[2] = static_cast<unsigned char>(request_id >> 8);
    header[3] = static_cast<unsigned char>(request_id & 0xff);
    at += kHeaderSize + (size_t{header[4]} << 8 | header[5]) + header[6];
  }
}

void AppendErrorRecords(std::string& out, std::string& scratch,
                        uint16_t request_id, int status,
                        std::string_view extra_headers) {
  const std::string_view reason = ReasonPhrase(status);
  scratch.clear();
  AppendHead(scratch, status, "text/plain", reason.size() + 1, false,
             extra_headers);
  scratch.append(reason);
  scratch.push_back('\n');
  AppendStream(out, kStdout, request_id, scratch);
  AppendEnd(out, request_id);
}

}  // namespace gearbox::fcgi
