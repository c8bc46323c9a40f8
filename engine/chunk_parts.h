// Chunk parts: a window's chunk is stored as one or more parts (storage/
// key_layout.h), one per flush that added points to the window, so a flush
// writes only its new points instead of reading, merging and rewriting the
// whole window. Readers merge the parts, a higher part winning on equal
// timestamps; a flush merges them back into one once a window has
// kMergePartsAt parts, and Db::Compact merges them all.
//
// Thread safety: pure functions over the caller's iterator and columns.
#pragma once

#include "engine/gpulse.h"
#include "leveldb/db.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

// A flush that finds this many parts in a window merges them with its points
// into one part instead of adding another.
inline constexpr int kMergePartsAt = 8;

// Reads the window whose first part `it` points at (described by *first),
// merging its parts into *merged (which must have the field's type; it is
// replaced). Leaves `it` at the first key past the window. *parts, when not
// null, gets the number of parts and *last_part the highest part number.
Status ReadWindowParts(leveldb::Iterator* it, const storage::ChunkKeyParts& first, Column* merged,
                       int* parts = nullptr, uint16_t* last_part = nullptr);

// Counts the parts of the window whose first part `it` points at, without
// decoding them; *last_part gets the highest part number. Leaves `it` past
// the window.
Status CountWindowParts(leveldb::Iterator* it, const storage::ChunkKeyParts& first, int* parts,
                        uint16_t* last_part);

}  // namespace gpulse::engine
