#include "engine/chunk_parts.h"

#include <algorithm>

#include "engine/column_ops.h"
#include "storage/chunk_codec.h"

namespace gpulse::engine {

namespace {

// Parses the key at `it` into *key; false when it is past the window of
// `first` (or not a chunk key, or the end).
bool InWindow(leveldb::Iterator* it, const storage::ChunkKeyParts& first,
              storage::ChunkKeyParts* key) {
  if (!it->Valid()) return false;
  const leveldb::Slice raw = it->key();
  return storage::ParseChunkKey(std::string_view(raw.data(), raw.size()), key) &&
         key->SameWindow(first);
}

}  // namespace

Status ReadWindowParts(leveldb::Iterator* it, const storage::ChunkKeyParts& first, Column* merged,
                       int* parts, uint16_t* last_part) {
  const FieldType type = merged->type;
  merged->Clear();
  int count = 0;
  uint16_t last = 0;
  Column part;
  storage::ChunkKeyParts key;
  for (; InWindow(it, first, &key); it->Next()) {
    const leveldb::Slice value = it->value();
    const Status s =
        storage::DecodeChunk(std::string_view(value.data(), value.size()), key.window_start, &part);
    // A part's times start at or after its window's (the key's), from
    // which version 2 writes them: one before it was read with another base.
    if (!s.ok() || part.type != type || !std::is_sorted(part.ts.begin(), part.ts.end()) ||
        (!part.ts.empty() && part.ts.front() < key.window_start)) {
      return Status::Corruption("chunk of series " + std::to_string(key.series_id) + " field " +
                                std::to_string(key.field_id) + " window " +
                                std::to_string(key.window_start) + " part " +
                                std::to_string(key.part) + ": " +
                                (s.ok() ? "type, order or window mismatch" : s.message()));
    }
    MergeNewer(part, merged);  // parts come in ascending order: newer last
    ++count;
    last = key.part;
  }
  if (!it->status().ok()) return Status::IOError("read chunks: " + it->status().ToString());
  if (parts) *parts = count;
  if (last_part) *last_part = last;
  return Status::Ok();
}

Status CountWindowParts(leveldb::Iterator* it, const storage::ChunkKeyParts& first, int* parts,
                        uint16_t* last_part) {
  *parts = 0;
  *last_part = 0;
  storage::ChunkKeyParts key;
  for (; InWindow(it, first, &key); it->Next()) {
    ++*parts;
    *last_part = key.part;
  }
  if (!it->status().ok()) return Status::IOError("read chunks: " + it->status().ToString());
  return Status::Ok();
}

}  // namespace gpulse::engine
