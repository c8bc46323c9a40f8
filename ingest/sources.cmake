# Sources of ingest/: parsers that turn bytes into points. They depend only on
# the public point types (engine/gpulse.h), never on the engine's internals.
set(GPULSE_INGEST_SOURCES
  ingest/fleet_sim.cc
  ingest/fleet_sim_emit.cc
  ingest/fleet_sim_incidents.cc
  ingest/fleet_sim_model.cc
  ingest/fleet_sim_plan.cc
  ingest/civil_time.cc
  ingest/csv_row.cc
  ingest/line_protocol.cc
  ingest/lp_format.cc
  ingest/lp_batch.cc
  ingest/nvsmi_csv.cc
  ingest/nvsmi_xml.cc
  ingest/pai_csv.cc
  ingest/prom_mapping.cc
  ingest/prom_text.cc
  ingest/remote_write.cc
)
