// The postgres route keys beyond dsn/query/params/pool that the loader checks
// as strings (the handler table has no duration or enum type): their checks
// make a bad value a file:line:col error, and the handler reads them back.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace gearbox::postgres {

// connect_timeout: a duration ("2s", "500ms") greater than 0.
std::string CheckConnectTimeout(std::string_view text);
// The checked value as microseconds.
std::chrono::microseconds ConnectTimeout(std::string_view text);

// pipeline: queries one connection of an async loop carries at once. A pool
// serves one route, so the queries on a connection are the same statement
// and take alike: a deep pipeline seldom waits behind a slow one.
inline constexpr int kDefaultPipeline = 16;
inline constexpr int kMaxPipeline = 64;

// int8: "number" or "string".
std::string CheckInt8(std::string_view text);
bool Int8AsString(std::string_view text);

}  // namespace gearbox::postgres
