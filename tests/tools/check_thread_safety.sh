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
# The sources that hold annotated locks: those that include storage/mutex.h,
# and those whose own header does (where the guarded members' methods are).
sources=()
for f in $(git ls-files '*.cc' | grep -E '^(storage|engine|ingest|query|server|shell)/'); do
  header="${f%.cc}.h"
  if grep -q '"storage/mutex.h"' "$f" ||
    { [ -f "$header" ] && grep -q '"storage/mutex.h"' "$header"; }; then
    sources+=("$f")
  fi
done
echo "thread-safety analysis of ${#sources[@]} files"
for f in "${sources[@]}"; do
  clang++ -std=c++20 -fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror -I. \
    -DBOOST_BEAST_USE_STD_STRING_VIEW "$f"
done
echo "thread-safety: every annotated lock holds"
