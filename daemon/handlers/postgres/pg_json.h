// A query's rows as the response body: a JSON array of objects, one per row,
// keyed by column name. int2/int4/int8/float4/float8/numeric are JSON
// numbers, bool is true/false, NULL is null, everything else a JSON string.
#pragma once

#include <postgresql/libpq-fe.h>

#include <string>

namespace gearbox::postgres {

// Replaces out with result's rows (a PGRES_TUPLES_OK result; any other
// result is an empty array).
void RowsToJson(const PGresult* result, std::string& out);

}  // namespace gearbox::postgres
