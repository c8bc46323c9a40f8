// Definitions: named texts kept in the store under 'D' kind \0 name
// (storage/key_layout.h). They are few and small (alert rules), so each put
// is its own synced LevelDB write and a listing is a prefix scan.
#include <memory>

#include "engine/db_impl.h"
#include "leveldb/iterator.h"
#include "storage/key_layout.h"

namespace gpulse::engine {

namespace {

Status CheckName(std::string_view what, std::string_view text) {
  if (text.empty())
    return Status::InvalidArgument("a definition's " + std::string(what) + " is empty");
  if (text.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("a definition's " + std::string(what) + " holds a NUL byte");
  }
  return Status::Ok();
}

std::string Describe(std::string_view kind, std::string_view name) {
  return std::string(kind) + " '" + std::string(name) + "'";
}

}  // namespace

Status DbImpl::PutDefinition(std::string_view kind, std::string_view name, std::string_view text) {
  GPULSE_RETURN_IF_ERROR(CheckName("kind", kind));
  GPULSE_RETURN_IF_ERROR(CheckName("name", name));
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  return StoreDefinition(kind, name, text);
}

Status DbImpl::StoreDefinition(std::string_view kind, std::string_view name,
                               std::string_view text) {
  leveldb::WriteOptions sync;
  sync.sync = true;
  const leveldb::Status s = store_->Put(sync, storage::DefinitionKey(kind, name),
                                        leveldb::Slice(text.data(), text.size()));
  if (!s.ok()) return Status::IOError("store " + Describe(kind, name) + ": " + s.ToString());
  return Status::Ok();
}

Status DbImpl::DeleteDefinition(std::string_view kind, std::string_view name) {
  GPULSE_RETURN_IF_ERROR(CheckName("kind", kind));
  GPULSE_RETURN_IF_ERROR(CheckName("name", name));
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  return EraseDefinition(kind, name);
}

Status DbImpl::EraseDefinition(std::string_view kind, std::string_view name) {
  const std::string key = storage::DefinitionKey(kind, name);
  std::string ignored;
  leveldb::Status s = store_->Get(leveldb::ReadOptions(), key, &ignored);
  if (s.IsNotFound()) return Status::NotFound("no " + Describe(kind, name));
  if (s.ok()) {
    leveldb::WriteOptions sync;
    sync.sync = true;
    s = store_->Delete(sync, key);
  }
  if (!s.ok()) return Status::IOError("delete " + Describe(kind, name) + ": " + s.ToString());
  return Status::Ok();
}

Status DbImpl::ListDefinitions(std::string_view kind,
                               std::vector<std::pair<std::string, std::string>>* out) {
  GPULSE_RETURN_IF_ERROR(CheckName("kind", kind));
  const auto open = HoldOpen();
  GPULSE_RETURN_IF_ERROR(CheckOpen());
  return ScanDefinitions(kind, out);
}

Status DbImpl::ScanDefinitions(std::string_view kind,
                               std::vector<std::pair<std::string, std::string>>* out) {
  out->clear();
  const std::string prefix = storage::DefinitionKey(kind, "");
  std::unique_ptr<leveldb::Iterator> it(store_->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    out->emplace_back(it->key().ToString().substr(prefix.size()), it->value().ToString());
  }
  if (!it->status().ok()) {
    return Status::IOError("list " + std::string(kind) +
                           " definitions: " + it->status().ToString());
  }
  return Status::Ok();
}

}  // namespace gpulse::engine
