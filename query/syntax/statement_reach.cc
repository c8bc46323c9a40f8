#include "query/syntax/statement_reach.h"

namespace gpulse::query {

namespace {

// Collects the one database the sources name, subqueries included. A second,
// different name is an error at the source that names it.
class NamedDatabase {
 public:
  Status Add(const std::vector<Source>& sources, const Position& at) {
    for (const Source& src : sources) {
      if (src.subquery) {
        GPULSE_RETURN_IF_ERROR(Add(src.subquery->sources, src.subquery->pos));
        continue;
      }
      GPULSE_RETURN_IF_ERROR(Add(src.measurement.database, at));
    }
    return Status::Ok();
  }

  Status Add(const std::string& database, const Position& at) {
    if (database.empty() || database == name_) return Status::Ok();
    if (!name_.empty()) {
      return Status::InvalidArgument("line " + std::to_string(at.line) + ", column " +
                                     std::to_string(at.column) +
                                     ": the statement names databases " + name_ + " and " +
                                     database + "; one statement reads one database");
    }
    name_ = database;
    return Status::Ok();
  }

  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

Reach OnDatabase(const NamedDatabase& named, std::string_view query_database, bool changes) {
  Reach r;
  r.database = named.name().empty() ? std::string(query_database) : named.name();
  r.changes = changes;
  return r;
}

Reach Everything(bool changes) {
  Reach r;
  r.kind = Reach::Kind::kEverything;
  r.changes = changes;
  return r;
}

}  // namespace

Result<Reach> StatementReach(const Statement& statement, std::string_view query_database) {
  NamedDatabase named;
  switch (statement.kind) {
    case StatementKind::kSelect: {
      const auto& s = static_cast<const SelectStatement&>(statement);
      GPULSE_RETURN_IF_ERROR(named.Add(s.sources, s.pos));
      return OnDatabase(named, query_database, false);
    }
    case StatementKind::kExplain: {
      const auto& s = *static_cast<const ExplainStatement&>(statement).select;
      GPULSE_RETURN_IF_ERROR(named.Add(s.sources, s.pos));
      return OnDatabase(named, query_database, false);
    }
    case StatementKind::kShow: {
      const auto& s = static_cast<const ShowStatement&>(statement);
      switch (s.what) {
        case ShowKind::kDatabases:
          return Reach{Reach::Kind::kNames, "", false};
        case ShowKind::kSources:
        case ShowKind::kAlerts:
        case ShowKind::kSeasons:
          return Everything(false);
        default:
          break;
      }
      GPULSE_RETURN_IF_ERROR(named.Add(s.sources, s.pos));
      GPULSE_RETURN_IF_ERROR(named.Add(s.database, s.pos));
      return OnDatabase(named, query_database, false);
    }
    case StatementKind::kDelete: {
      const auto& s = static_cast<const DeleteStatement&>(statement);
      GPULSE_RETURN_IF_ERROR(named.Add(s.sources, s.pos));
      return OnDatabase(named, query_database, true);
    }
    case StatementKind::kNorthstar:
    case StatementKind::kDecompose:
    case StatementKind::kAnomalies:
    case StatementKind::kRollouts:
      return OnDatabase(named, query_database, false);
    case StatementKind::kCreateDatabase:
      return Reach{Reach::Kind::kDatabase,
                   static_cast<const CreateDatabaseStatement&>(statement).name, true};
    case StatementKind::kCreateAlert:
    case StatementKind::kCreateSeason:
    case StatementKind::kDropDefinition:
      return Everything(true);
  }
  return Everything(true);
}

}  // namespace gpulse::query
