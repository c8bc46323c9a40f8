// The two kinds of tier rows, as the engine's tier code handles them alike:
// rollups (numeric fields, storage/rollup.h) and tallies (string fields,
// storage/tally.h). Each kind is a set of static functions over its rows
// type, so UpdateTierRows, ScanTierRows and the delete path are written once.
//
// Thread safety: stateless.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "engine/gpulse.h"
#include "engine/window_cache.h"
#include "storage/rollup.h"
#include "storage/tally.h"

namespace gpulse::engine {

// What the tier code needs of a kind of tier rows: rollups (numeric
// fields) or tallies (string fields).
struct RollupKind {
  using Rows = storage::RollupColumn;
  static bool For(FieldType type) { return storage::HasRollups(type); }
  static void Reset(FieldType type, Rows* r) { r->Reset(type); }
  // `dict`: the dictionary of the block's tier and field, or null.
  static Status Decode(std::string_view data, const storage::ZstdDictionary* dict, Rows* r) {
    if (storage::IsTallyBlock(data))
      return Status::Corruption("a tally block under a numeric field");
    return storage::DecodeRollups(data, storage::kRollupAll, dict, r);
  }
  // `tier`: the index in storage::kTiers of the tier the rows are stored in.
  static void Encode(const Rows& r, size_t tier, const storage::ZstdDictionary* dict,
                     std::string* out) {
    storage::EncodeRollups(r, storage::KeepsSketches(tier), dict, out);
  }
  static void Build(const Column& raw, int64_t width, Rows* out) {
    storage::BuildRollups(raw, 0, raw.size(), width, out);
  }
  static void Coarsen(const Rows& fine, int64_t width, Rows* out) {
    storage::CoarsenRollups(fine, width, out);
  }
  static void Append(const Rows& from, size_t j, Rows* into) {
    storage::AppendRollupRow(from, j, into);
  }
  static void MergeLast(const Rows& from, size_t j, Rows* into) {
    storage::MergeIntoLastRow(from, j, into);
  }
  static int64_t FirstTs(const Rows& r, size_t i) { return r.first.ts[i]; }
  static int64_t LastTs(const Rows& r, size_t i) { return r.last.ts[i]; }
  static bool TypeIs(const Rows& r, FieldType type) { return r.type == type; }
  static FieldType TypeOf(const Rows& r) { return r.type; }
  static std::shared_ptr<const Rows> Lookup(WindowCache* c, const WindowKey& k) {
    return c->LookupRollups(k);
  }
  static void LookupMany(WindowCache* c, std::span<const WindowKey> k,
                         std::shared_ptr<const Rows>* out) {
    c->LookupRollups(k, out);
  }
  static void Insert(WindowCache* c, const WindowKey& k, std::shared_ptr<const Rows> r,
                     uint64_t epoch) {
    c->InsertRollups(k, std::move(r), epoch);
  }
};

struct TallyKind {
  using Rows = storage::TallyColumn;
  static bool For(FieldType type) { return type == FieldType::kString; }
  static void Reset(FieldType, Rows* r) { r->Reset(); }
  static Status Decode(std::string_view data, const storage::ZstdDictionary* dict, Rows* r) {
    if (!storage::IsTallyBlock(data))
      return Status::Corruption("a rollup block under a string field");
    return storage::DecodeTallies(data, dict, r);
  }
  static void Encode(const Rows& r, size_t /*tier*/, const storage::ZstdDictionary* dict,
                     std::string* out) {
    storage::EncodeTallies(r, dict, out);
  }
  static void Build(const Column& raw, int64_t width, Rows* out) {
    storage::BuildTallies(raw, 0, raw.size(), width, out);
  }
  static void Coarsen(const Rows& fine, int64_t width, Rows* out) {
    storage::CoarsenTallies(fine, width, out);
  }
  static void Append(const Rows& from, size_t j, Rows* into) {
    storage::AppendTallyRow(from, j, into);
  }
  static void MergeLast(const Rows& from, size_t j, Rows* into) {
    storage::MergeIntoLastTallyRow(from, j, into);
  }
  static int64_t FirstTs(const Rows& r, size_t i) { return r.first_ts[i]; }
  static int64_t LastTs(const Rows& r, size_t i) { return r.last_ts[i]; }
  static bool TypeIs(const Rows&, FieldType type) { return type == FieldType::kString; }
  static FieldType TypeOf(const Rows&) { return FieldType::kString; }
  static std::shared_ptr<const Rows> Lookup(WindowCache* c, const WindowKey& k) {
    return c->LookupTallies(k);
  }
  static void LookupMany(WindowCache* c, std::span<const WindowKey> k,
                         std::shared_ptr<const Rows>* out) {
    c->LookupTallies(k, out);
  }
  static void Insert(WindowCache* c, const WindowKey& k, std::shared_ptr<const Rows> r,
                     uint64_t epoch) {
    c->InsertTallies(k, std::move(r), epoch);
  }
};

// The kind whose rows a field of `type` has: fn(RollupKind{}) or
// fn(TallyKind{}); false when the type has no tier rows (booleans).
template <typename Fn>
bool WithTierKind(FieldType type, Fn&& fn) {
  if (TallyKind::For(type)) {
    fn(TallyKind{});
    return true;
  }
  if (RollupKind::For(type)) {
    fn(RollupKind{});
    return true;
  }
  return false;
}

}  // namespace gpulse::engine
