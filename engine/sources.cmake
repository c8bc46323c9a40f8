# Sources of the engine (series index, head, flush, public API).
set(GPULSE_ENGINE_SOURCES
  engine/chunk_parts.cc
  engine/column_ops.cc
  engine/db_compact.cc
  engine/db_delete.cc
  engine/db_flush.cc
  engine/db_impl.cc
  engine/db_merge_parts.cc
  engine/db_read.cc
  engine/db_retention.cc
  engine/db_tiers.cc
  engine/db_write.cc
  engine/head.cc
  engine/series_index.cc
  engine/wal_batch.cc
  engine/window_cache.cc
)
