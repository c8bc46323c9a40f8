// The console: the page `gpulse serve` answers at / (docs/console.md). Its
// files (server/console/) and Chart.js (Debian's libjs-chart.js) are built
// into the program by server/console/embed.cmake; this is how the HTTP API
// finds them.
//
// Thread safety: pure functions over constant data.
#pragma once

#include <string_view>

namespace gpulse::server {

struct ConsoleAsset {
  std::string_view url;           // "/", "/console/console.js"...
  std::string_view content_type;  // from the file's extension
  std::string_view body;
};

// The asset served at `url`, or null.
const ConsoleAsset* FindConsoleAsset(std::string_view url);

}  // namespace gpulse::server
