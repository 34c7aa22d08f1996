// FastCGI responder output: records appended to a connection's output buffer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "daemon/response.h"

namespace gearbox::fcgi {

// One record of at most kMaxContent bytes, padded to a multiple of 8. An empty
// `content` gives an empty record (the end of a stream).
void AppendRecord(std::string& out, uint8_t type, uint16_t request_id,
                  std::string_view content);

// `a` then `b` as one stream of records of at most kMaxContent bytes each,
// padded to a multiple of 8. Appends nothing when both are empty (no
// end-of-stream).
void AppendStream(std::string& out, uint8_t type, uint16_t request_id,
                  std::string_view a, std::string_view b = {});

void AppendEndRequest(std::string& out, uint16_t request_id,
                      uint32_t app_status, uint8_t protocol_status);

// FCGI_UNKNOWN_TYPE: the answer to a management record we do not understand.
void AppendUnknownType(std::string& out, uint8_t type);

// A complete response to `request_id`: the CGI head ("Status: 200 OK\r\n",
// Content-Type, Content-Length, extra headers) and body on STDOUT, the empty
// STDOUT record, and END_REQUEST (appStatus 0, FCGI_REQUEST_COMPLETE). The body
// is left out for HEAD and for 1xx/204/304 (as the HTTP writer does). `scratch`
// is reused for the head so a response costs no allocation.
void AppendResponseRecords(std::string& out, std::string& scratch,
                           uint16_t request_id, const Response& response,
                           bool is_head);

// Sets the request id of every whole record in `records` (rendered ahead of
// the request). Async-signal-safe.
void StampRequestId(std::span<char> records, uint16_t request_id);

// The same for an error answer (413, 431, 503, 408...): text/plain reason
// phrase.
void AppendErrorRecords(std::string& out, std::string& scratch,
                        uint16_t request_id, int status,
                        std::string_view extra_headers);

}  // namespace gearbox::fcgi
