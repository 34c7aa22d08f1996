// libpq before 14 (EL8/EL9 ship 13) has no pipeline mode. There connections
// are never pipelined (PgPool::Connected enters pipeline mode only under
// LIBPQ_HAS_PIPELINING), so nothing below is ever called or returned: these
// let the pipelined path compile, with libpq 14's values.
#pragma once

#include <postgresql/libpq-fe.h>

#ifndef LIBPQ_HAS_PIPELINING
inline constexpr ExecStatusType PGRES_PIPELINE_SYNC =
    static_cast<ExecStatusType>(10);
inline constexpr ExecStatusType PGRES_PIPELINE_ABORTED =
    static_cast<ExecStatusType>(11);
inline int PQpipelineSync(PGconn*) { return 0; }
#endif
