#include "daemon/handlers/postgres/pg_segment.h"

namespace gearbox::postgres {

bool SegmentCommands::TouchesStatements() const {
  for (uint8_t i = current; i < count; ++i) {
    if (kinds[i] == Kind::kPrepare || kinds[i] == Kind::kDeallocate) {
      return true;
    }
  }
  return false;
}

void SegmentCommands::Deallocated(const PGresult* result,
                                  StatementCache& cache) {
  if (PQresultStatus(result) == PGRES_PIPELINE_ABORTED) {
    cache.evicted().push_back(
        std::move(deallocating[current - first_deallocation]));
  }
}

void OrphanSegment::OnResult(PGresult* result) {
  switch (commands_.Current()) {
    case SegmentCommands::Kind::kDeallocate:
      commands_.Deallocated(result, *cache_);
      break;
    case SegmentCommands::Kind::kPrepare:
      prepare_failed_ = PQresultStatus(result) != PGRES_COMMAND_OK;
      break;
    default:
      break;
  }
  PQclear(result);
}

void OrphanSegment::OnCommandEnd() {
  if (commands_.Current() == SegmentCommands::Kind::kPrepare &&
      prepare_failed_) {
    cache_->Forget(statement_);
  }
  commands_.Advance();
}

}  // namespace gearbox::postgres
