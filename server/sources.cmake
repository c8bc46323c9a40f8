# Sources of the HTTP server (Boost.Beast): a library of its own, so that
# libgpulse, the embedding library, needs neither Beast nor zlib.
set(GPULSE_SERVER_SOURCES
  server/alerts.cc
  server/auth.cc
  server/config.cc
  server/forwarder.cc
  server/gzip.cc
  server/http_api.cc
  server/http_api_fleet.cc
  server/http_api_prom.cc
  server/http_api_write.cc
  server/http_client.cc
  server/http_server.cc
  server/ledger_export.cc
  server/prom_remote_read.cc
  server/metrics.cc
  server/scraper.cc
  server/sources.cc
  server/webhook.cc
)
