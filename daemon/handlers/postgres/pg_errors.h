// What a failed exchange answers: one table maps a server error's SQLSTATE to
// an HTTP status and a category (the README's table is written from it), and
// every failure's body is JSON an application can act on:
//   {"error": <category>, "sqlstate": "23505"[, "retry": true]}
// Never the server's message or the query: those may quote data (a class 23
// message names the constraint and the duplicate key), so they go to the
// log only.
#pragma once

#include <string_view>

#include "daemon/response.h"

namespace gearbox::postgres {

struct ErrorAnswer {
  int status;
  const char* category;
  bool retry = false;  // the same request may succeed if sent again
};

// The answer to a statement that failed to run with this SQLSTATE (five
// characters, or "" when the server sent none).
ErrorAnswer AnswerForSqlstate(std::string_view sqlstate);

// A statement that the server would not prepare (a syntax error, an untyped
// $1, a missing table): the route's SQL is wrong, not the request.
inline constexpr ErrorAnswer kPrepareFailed{500,
                                            "statement cannot be prepared"};
inline constexpr ErrorAnswer kUnreachable{502, "database unreachable"};
inline constexpr ErrorAnswer kConnectionLost{502, "database connection lost"};
inline constexpr ErrorAnswer kResultTooLarge{502, "result too large"};
// A file descriptor or memory the pool needed was not there: this worker is
// at a resource limit, the database may be fine.
inline constexpr ErrorAnswer kNoResources{503, "server out of resources"};
// The request lacks a value for one of the route's params.
inline constexpr ErrorAnswer kMissingParameter{400, "missing parameter"};

// Fills response with answer's status and JSON body (sqlstate omitted when
// empty or not alphanumeric; parameter, the name of the request's parameter
// at fault, when empty).
void Answer(Response& response, const ErrorAnswer& answer,
            std::string_view sqlstate = {}, std::string_view parameter = {});

// True when a libpq error message says a file descriptor could not be had
// (EMFILE, ENFILE): a resource limit of this process, not the database's
// failure, so no reconnect backoff.
bool OutOfDescriptors(std::string_view libpq_message);

}  // namespace gearbox::postgres
