// What the libFuzzer targets share: an invariant check that aborts (so the
// fuzzer keeps the input), and a read of every byte of a view (so ASan
// checks views into the input and the parsers' scratch buffers).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string_view>

namespace gpulse::fuzz {

inline void Check(bool ok) {
  if (!ok) std::abort();
}

inline size_t Touch(std::string_view s) {
  size_t sum = 0;
  for (char c : s) sum += static_cast<unsigned char>(c);
  return sum;
}

}  // namespace gpulse::fuzz
