#!/usr/bin/env bash
# Clang's thread-safety analysis over the sources whose locks are annotated
# (storage/thread_annotations.h, storage/mutex.h): a guarded member touched
# without its mutex, or a *Locked helper called without it, fails the
# check, naming the line. g++ builds ignore the annotations; this is where
# they are enforced. ctest runs it (ThreadSafetyAnnotationsHold, label
# unit); it skips when clang++ is absent (.ci/deps installs clang).
#
# Usage: tests/tools/check_thread_safety.sh    (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v clang++ >/dev/null; then
  echo "clang++ not installed: skipped"
  exit 0
fi
# The headers that declare annotated locks (they include storage/mutex.h),
# and the sources that use them: those that include storage/mutex.h or one
# of those headers (where the guarded members' methods are).
product='^(storage|engine|ingest|query|server|shell)/'
headers=$(git ls-files '*.h' | grep -E "$product" | xargs grep -l '"storage/mutex.h"')
pattern='"storage/mutex.h"'
for h in $headers; do pattern="$pattern|\"$h\""; done
sources=$(git ls-files '*.cc' | grep -E "$product" | xargs grep -lE "$pattern")
# The remote-write messages' generated header, as the build makes it.
generated=$(mktemp -d)
trap 'rm -rf "$generated"' EXIT
protoc --cpp_out="$generated" -I ingest ingest/prompb.proto
echo "thread-safety analysis of $(echo "$sources" | wc -w) files"
printf '%s\n' $sources | xargs -P 2 -n 4 clang++ -std=c++20 -fsyntax-only -Wthread-safety \
  -Wthread-safety-beta -Werror -I. -I"$generated" -DBOOST_BEAST_USE_STD_STRING_VIEW \
  '-DGPULSE_VERSION="check"'
echo "thread-safety: every annotated lock holds"
