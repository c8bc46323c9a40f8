# Sources of ingest/: parsers that turn bytes into points. They depend only on
# the public point types (engine/gpulse.h), never on the engine's internals.
set(GPULSE_INGEST_SOURCES
  ingest/line_protocol.cc
  ingest/lp_batch.cc
  ingest/prom_mapping.cc
  ingest/prom_text.cc
)
