// Reads of the downsampling tiers (ScanRollups, ScanTallies): the stored
// rows of each series-field's blocks in range, from the window cache or the
// store, with the buckets the unflushed points fall in computed again from
// all their raw points.
//
// ScanTierRows goes in steps: PlanTierScan (the blocks), TierPartsLocked
// (fields and unflushed points, under one hold of the state lock), one
// cache look-up of every block when there are few, then per series-field
// ReadTierBlocks (the stored rows, minus the touched buckets) and
// RecomputeTierBuckets (those buckets).

#include <algorithm>

#include "engine/db_impl.h"
#include "engine/tier_kinds.h"
#include "storage/key_layout.h"
#include "storage/rollup.h"

namespace gpulse::engine {

namespace {

// The position of the first of a block's rows (bucket starts of width
// `width`, ascending) at or after t: by arithmetic when the block has no
// gaps (its first and last rows as far apart as their count says), so that
// a read of hundreds of series does not search each one's rows twice.
size_t FirstRowAtOrAfter(const std::vector<int64_t>& bucket, int64_t t, int64_t width) {
  const size_t n = bucket.size();
  if (n == 0 || t <= bucket.front()) return 0;
  if (t > bucket.back()) return n;
  const auto w = static_cast<uint64_t>(width);
  const uint64_t apart =
      static_cast<uint64_t>(bucket.back()) - static_cast<uint64_t>(bucket.front());
  if (n <= static_cast<size_t>(storage::kRollupBlockRows) && apart == (n - 1) * w) {
    return static_cast<size_t>(
        (static_cast<uint64_t>(t) - static_cast<uint64_t>(bucket.front()) + w - 1) / w);
  }
  return static_cast<size_t>(std::lower_bound(bucket.begin(), bucket.end(), t) - bucket.begin());
}

// The buckets of [start, end) that hold points of the sealed head's and the
// head's columns of a field, ascending.
std::vector<int64_t> TouchedBuckets(const Column& sealed, const Column& head, int64_t width,
                                    int64_t start_ns, int64_t end_ns) {
  std::vector<int64_t> touched;
  for (const Column* copy : {&sealed, &head}) {
    for (int64_t ts : copy->ts) {
      const int64_t b = storage::WindowStart(ts, width);
      if (b >= start_ns && b < end_ns && (touched.empty() || touched.back() != b)) {
        touched.push_back(b);
      }
    }
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  return touched;
}

}  // namespace

Status DbImpl::ScanRollups(SeriesRef series, std::span<const std::string> fields, size_t tier,
                           int64_t start_ns, int64_t end_ns, uint32_t parts,
                           const RollupVisitor& fn) {
  (void)parts;  // every part is decoded: blocks are cached whole
  SeriesId id = kNoId;
  GPULSE_RETURN_IF_ERROR(FindSeriesId(series, &id));
  return ScanTierRows<RollupKind>(std::span<const SeriesId>(&id, 1), fields, tier, start_ns, end_ns,
                                  [&](size_t, size_t f, const storage::RollupColumn& rows, size_t b,
                                      size_t e) { fn(f, rows, b, e); });
}

Status DbImpl::ScanRollups(std::span<const SeriesId> ids, std::span<const std::string> fields,
                           size_t tier, int64_t start_ns, int64_t end_ns, uint32_t parts,
                           const SeriesRollupVisitor& fn) {
  (void)parts;
  return ScanTierRows<RollupKind>(ids, fields, tier, start_ns, end_ns, fn);
}

Status DbImpl::ScanTallies(SeriesRef series, std::span<const std::string> fields, size_t tier,
                           int64_t start_ns, int64_t end_ns, const TallyVisitor& fn) {
  SeriesId id = kNoId;
  GPULSE_RETURN_IF_ERROR(FindSeriesId(series, &id));
  return ScanTierRows<TallyKind>(std::span<const SeriesId>(&id, 1), fields, tier, start_ns, end_ns,
                                 [&](size_t, size_t f, const storage::TallyColumn& rows, size_t b,
                                     size_t e) { fn(f, rows, b, e); });
}

Status DbImpl::FindSeriesId(SeriesRef series, SeriesId* id) {
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  ReaderLock l(&mu_);
  *id = FindSeriesIdLocked(series);
  if (*id == kNoId) return Status::NotFound(NoSeries(series));
  return Status::Ok();
}

void DbImpl::PlanTierScan(size_t tier, int64_t start_ns, int64_t end_ns, TierScan* scan) {
  const storage::Tier& t = storage::kTiers[tier];
  scan->tier = &t;
  scan->start_ns = start_ns;
  scan->end_ns = end_ns;
  // Unflushed points of whole buckets: the last bucket may end past end_ns.
  scan->snap_end =
      storage::NextWindowStart(storage::WindowStart(end_ns - 1, t.width_ns), t.width_ns);
  scan->span = storage::BlockSpan(t);
  scan->first_block = storage::WindowStart(start_ns, scan->span);
  // The blocks [start_ns, end_ns) overlaps, when few enough to look up in
  // the cache all at once (a range of years of 5m rows is looked up block by
  // block, skipping the gaps between stored blocks).
  constexpr size_t kLookUpFirst = 16;
  size_t blocks = 0;
  for (int64_t b = scan->first_block; b < end_ns && blocks <= kLookUpFirst;
       b = storage::NextWindowStart(b, scan->span)) {
    ++blocks;
    if (b > INT64_MAX - scan->span) break;
  }
  scan->looked_up = blocks <= kLookUpFirst;
  scan->blocks = scan->looked_up ? blocks : 0;
}

Status DbImpl::TierPartsLocked(std::span<const SeriesId> ids, std::span<const std::string> fields,
                               TierScan* scan, std::vector<TierPart>* parts,
                               std::vector<SeriesSnapshot::Field>* unflushed) const {
  // The unflushed points are copied only when the head or the sealed head
  // may hold some in range (most reads are of flushed time: then a series
  // costs no look in either).
  const size_t nf = fields.size();
  parts->assign(ids.size() * nf, TierPart{});
  const Unflushed in = UnflushedInLocked(scan->start_ns, scan->snap_end);
  if (in.sealed || in.head) unflushed->resize(parts->size());
  // The fields by name, found again only when the measurement changes.
  const std::string* measurement = nullptr;
  std::vector<const FieldEntry*> found(nf);
  for (size_t s = 0; s < ids.size(); ++s) {
    if (ids[s] >= index_.series_count()) {
      return Status::InvalidArgument("no series with id " + std::to_string(ids[s]));
    }
    const std::string& m = index_.series(ids[s]).series.measurement;
    if (measurement == nullptr || *measurement != m) {
      measurement = &m;
      for (size_t i = 0; i < nf; ++i) found[i] = index_.FindField(m, fields[i]);
    }
    for (size_t i = 0; i < nf; ++i) {
      if (!found[i]) continue;
      (*parts)[s * nf + i] = {found[i]->id, found[i]->type};
      if (!unflushed->empty()) {
        SnapshotFieldLocked(ids[s], *found[i], scan->start_ns, scan->snap_end, in,
                            &(*unflushed)[s * nf + i]);
      }
    }
  }
  scan->epoch = window_cache_.epoch();
  return Status::Ok();
}

template <typename Kind, typename Emit>
Status DbImpl::ReadTierBlocks(TierScan* scan, SeriesId id, TierPart part,
                              std::shared_ptr<const typename Kind::Rows>* cached,
                              const Emit& emit) {
  using Rows = typename Kind::Rows;
  const storage::Tier& t = *scan->tier;
  int64_t block = scan->first_block;
  while (block < scan->end_ns) {
    const WindowKey cache_key{id, part.id, block, t.id};
    std::shared_ptr<const Rows> rows;
    if (cached != nullptr) {
      const uint64_t j = (static_cast<uint64_t>(block) - static_cast<uint64_t>(scan->first_block)) /
                         static_cast<uint64_t>(scan->span);
      rows = std::move(cached[j]);
    } else {
      rows = Kind::Lookup(&window_cache_, cache_key);
    }
    if (!rows) {
      // The first stored block at or after `block` (blocks may be missing).
      if (!scan->it) {
        leveldb::ReadOptions options;
        options.snapshot = scan->store->get();
        scan->it.reset(store_->NewIterator(options));
      }
      leveldb::Iterator* it = scan->it.get();
      it->Seek(storage::ChunkKey(t.id, id, part.id, block));
      storage::ChunkKeyParts k;
      bool found = false;
      if (it->Valid()) {
        const leveldb::Slice raw_key = it->key();
        found = storage::ParseChunkKey(std::string_view(raw_key.data(), raw_key.size()), &k) &&
                k.tier == t.id && k.series_id == id && k.field_id == part.id;
      }
      if (!found || k.window_start != block) {
        // `block` has no rows stored: remembered as an empty entry, so that
        // the next query over it (the last block of a range that reaches
        // past the data) does not seek the store again. A flush that writes
        // the block drops the entry.
        if (it->status().ok()) {
          auto none = std::make_shared<Rows>();
          Kind::Reset(part.type, none.get());
          Kind::Insert(&window_cache_, cache_key, std::move(none), scan->epoch);
        }
        if (!found || k.window_start >= scan->end_ns) break;
        block = k.window_start;  // past a gap: that block may be cached
        continue;
      }
      Rows decoded;
      const leveldb::Slice v = it->value();
      Status d = Kind::Decode(std::string_view(v.data(), v.size()), tier_dicts_.Find(t.id, part.id),
                              &decoded);
      if (d.ok() && !Kind::TypeIs(decoded, part.type)) {
        d = Status::Corruption("type differs from the field's");
      }
      if (!d.ok()) {
        // A damaged block: the rest of this series-field is left out, the
        // other series are read, and the call says so at the end.
        std::string name;
        {
          ReaderLock l(&mu_);
          name = SeriesName(index_.series(id).series);
        }
        Status why = Status::Corruption("tier " + std::string(t.name) + " block of " + name +
                                        " from " + std::to_string(block) + ": " + d.message());
        LogDamage(why, cache_key);
        if (scan->damage.ok()) scan->damage = std::move(why);
        break;
      }
      auto shared = std::make_shared<const Rows>(std::move(decoded));
      Kind::Insert(&window_cache_, cache_key, shared, scan->epoch);
      rows = std::move(shared);
    }
    const size_t lo = FirstRowAtOrAfter(rows->bucket, scan->start_ns, t.width_ns);
    const size_t hi = FirstRowAtOrAfter(rows->bucket, scan->end_ns, t.width_ns);
    if (lo < hi) emit(*rows, lo, hi);
    if (block > INT64_MAX - scan->span) break;
    block = storage::NextWindowStart(block, scan->span);
  }
  if (scan->it && !scan->it->status().ok()) {
    return Status::IOError("read tier rows: " + scan->it->status().ToString());
  }
  return Status::Ok();
}

template <typename Kind>
Status DbImpl::RecomputeTierBuckets(TierScan* scan, SeriesId id, TierPart part,
                                    SeriesSnapshot::Field unflushed,
                                    const std::vector<int64_t>& touched,
                                    typename Kind::Rows* rows) {
  // The series' snapshot as ReadMerged takes it: this field's points.
  SeriesSnapshot snap(scan->store);
  snap.series_id = id;
  snap.epoch = scan->epoch;
  snap.fields.push_back(std::move(unflushed));
  Kind::Reset(part.type, rows);
  const int64_t width = scan->tier->width_ns;
  for (int64_t b : touched) {
    Column raw;
    GPULSE_RETURN_IF_ERROR(ReadMerged(snap, 0, b, storage::NextWindowStart(b, width), &raw));
    Kind::Build(raw, width, rows);
  }
  return Status::Ok();
}

template <typename Kind, typename Visitor>
Status DbImpl::ScanTierRows(std::span<const SeriesId> ids, std::span<const std::string> fields,
                            size_t tier, int64_t start_ns, int64_t end_ns, const Visitor& fn) {
  using Rows = typename Kind::Rows;
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  if (tier >= storage::kTierCount || !(tier_mask_ & (1u << tier))) {
    return Status::InvalidArgument("tier " + std::to_string(tier) +
                                   " is not kept (Options::tiers)");
  }
  if (start_ns >= end_ns || ids.empty()) return Status::Ok();
  LazySnapshot store(store_.get());
  TierScan scan(&store);
  PlanTierScan(tier, start_ns, end_ns, &scan);
  const size_t nf = fields.size();
  std::vector<TierPart> parts;
  std::vector<SeriesSnapshot::Field> unflushed;  // parts' positions, when copied
  {
    ReaderLock l(&mu_);
    GPULSE_RETURN_IF_ERROR(TierPartsLocked(ids, fields, &scan, &parts, &unflushed));
  }
  // Every block's cached rows under one hold of the cache's lock, at
  // cached[(s * nf + f) * blocks + j], when the range has few blocks.
  std::vector<std::shared_ptr<const Rows>> cached;
  if (scan.looked_up) {
    std::vector<WindowKey> keys;
    keys.reserve(parts.size() * scan.blocks);
    for (size_t s = 0; s < ids.size(); ++s) {
      for (size_t i = 0; i < nf; ++i) {
        for (size_t j = 0; j < scan.blocks; ++j) {
          keys.push_back({ids[s], parts[s * nf + i].id,
                          scan.first_block + static_cast<int64_t>(j) * scan.span, scan.tier->id});
        }
      }
    }
    cached.resize(keys.size());
    Kind::LookupMany(&window_cache_, keys, cached.data());
  }

  for (size_t s = 0; s < ids.size(); ++s) {
    for (size_t i = 0; i < nf; ++i) {
      const TierPart& p = parts[s * nf + i];
      if (p.id == kNoId || !Kind::For(p.type)) continue;
      // Buckets with unflushed points: computed from all their raw points;
      // the stored rows of those buckets are skipped.
      const std::vector<int64_t> touched =
          unflushed.empty()
              ? std::vector<int64_t>()
              : TouchedBuckets(unflushed[s * nf + i].sealed, unflushed[s * nf + i].head,
                               scan.tier->width_ns, start_ns, end_ns);
      // Emits rows [lo, hi) of a block, minus the touched buckets.
      auto emit = [&](const Rows& rows, size_t lo, size_t hi) {
        if (touched.empty()) return fn(s, i, rows, lo, hi);
        size_t a = lo;
        for (size_t r = lo; r < hi; ++r) {
          if (!std::binary_search(touched.begin(), touched.end(), rows.bucket[r])) continue;
          if (a < r) fn(s, i, rows, a, r);
          a = r + 1;
        }
        if (a < hi) fn(s, i, rows, a, hi);
      };
      std::shared_ptr<const Rows>* blocks =
          scan.looked_up ? &cached[(s * nf + i) * scan.blocks] : nullptr;
      GPULSE_RETURN_IF_ERROR(ReadTierBlocks<Kind>(&scan, ids[s], p, blocks, emit));
      if (touched.empty()) continue;
      Rows fixed;
      GPULSE_RETURN_IF_ERROR(RecomputeTierBuckets<Kind>(
          &scan, ids[s], p, std::move(unflushed[s * nf + i]), touched, &fixed));
      if (fixed.size() > 0) fn(s, i, fixed, 0, fixed.size());
    }
  }
  return scan.damage;
}

}  // namespace gpulse::engine
