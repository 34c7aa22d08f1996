// A route's dsn (a libpq conninfo: "host=/run/postgresql dbname=app" or a
// postgresql:// URI) as the loader checks it and as -p and log lines show it.
#pragma once

#include <string>
#include <string_view>

namespace gearbox::postgres {

// "" when libpq parses dsn, else what is wrong (libpq's message).
std::string CheckConninfo(std::string_view dsn);

// dsn as keyword=value pairs with a password replaced by "********". A dsn
// libpq cannot parse is shown as "<unparsable conninfo>": a password may sit
// anywhere in it.
std::string RedactConninfo(std::string_view dsn);

// "" when query is a usable statement text, else why not.
std::string CheckQuery(std::string_view query);

}  // namespace gearbox::postgres
