#include "daemon/handlers/postgres/pg_errors.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

namespace gearbox::postgres {
namespace {

// A row matches a whole SQLSTATE (5 characters) or its class (the first 2).
// First match wins: exact codes come before their class.
struct SqlstateRow {
  std::string_view code;
  ErrorAnswer answer;
};

constexpr SqlstateRow kSqlstateTable[] = {
    // Serialization failure and deadlock: the transaction lost a race; the
    // client may retry. 409, not 503: nginx's upstream snippet reserves 503
    // for "the handler never ran", retries it and counts it in max_fails.
    {"40001", {409, "serialization failure", true}},
    {"40P01", {409, "deadlock detected", true}},
    // Class 22, data exception: a parameter the server could not take
    // (?id=abc for an int is 22P02, an out-of-range value 22003).
    {"22", {400, "invalid parameter"}},
    // Class 23, integrity constraint violation (23505 unique, 23503 foreign
    // key): the request conflicts with the data.
    {"23", {409, "constraint violation"}},
    // The statement was cancelled (statement_timeout, an operator's
    // pg_cancel_backend): the backend gave no answer.
    {"57014", {502, "query cancelled"}},
};

constexpr ErrorAnswer kOtherwise{502, "query failed"};

bool Alphanumeric(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) != 0; });
}

}  // namespace

ErrorAnswer AnswerForSqlstate(std::string_view sqlstate) {
  for (const SqlstateRow& row : kSqlstateTable) {
    if (sqlstate.substr(0, row.code.size()) == row.code) return row.answer;
  }
  return kOtherwise;
}

void Answer(Response& response, const ErrorAnswer& answer,
            std::string_view sqlstate, std::string_view parameter) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  writer.Key("error");
  writer.String(answer.category);
  if (!sqlstate.empty() && Alphanumeric(sqlstate)) {
    writer.Key("sqlstate");
    writer.String(sqlstate.data(),
                  static_cast<rapidjson::SizeType>(sqlstate.size()));
  }
  if (!parameter.empty()) {
    writer.Key("parameter");
    writer.String(parameter.data(),
                  static_cast<rapidjson::SizeType>(parameter.size()));
  }
  if (answer.retry) {
    writer.Key("retry");
    writer.Bool(true);
  }
  writer.EndObject();
  response.status = answer.status;
  response.content_type = "application/json";
  response.body.assign(buffer.GetString(), buffer.GetSize());
  response.body += '\n';
}

bool OutOfDescriptors(std::string_view libpq_message) {
  // libpq writes strerror() of the failed socket() into its message.
  return libpq_message.find(strerror(EMFILE)) != std::string_view::npos ||
         libpq_message.find(strerror(ENFILE)) != std::string_view::npos;
}

}  // namespace gearbox::postgres
