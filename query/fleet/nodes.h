// The fleet's nodes as the REST API and the console show them
// (docs/http-api.md, "The fleet"): each node's place, GPUs and driver from
// its agent's `node` and `gpu` points (docs/fleet-schema.md), and its
// status, with the audit trail of every change.
//
// A node's status is healthy, degraded or maintenance. A person (PUT
// /api/v1/nodes/{id}/status) or an alert rule's ACTION sets it; every change
// is a `node_action` point (tags node and, in a database, db; string fields
// action, before, after, actor, reason), written through the WAL like any
// other point, so the trail is as durable as the data and is forwarded and
// queried as data. A set degraded or maintenance stays until it is set
// again; setting healthy clears it, and the node is then as its agent
// reports it: maintenance while it reports maintenance = 1, degraded while
// it reports healthy = 0 or fewer GPUs than its inventory.
//
// Maintenance set here is planned maintenance: it also writes a window into
// the `maintenance` measurement (tag reason "node-status"), open until the
// node leaves maintenance, and NORTHSTAR's capacity, BASELINE and the alert
// rules leave those minutes out as they do the scheduler's windows.
//
// Thread safety: the functions may run on several threads at once.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gpulse.h"

namespace gpulse::query {

inline constexpr std::string_view kNodeActionMeasurement = "node_action";
// The `reason` tag of the maintenance windows a status change writes.
inline constexpr std::string_view kStatusMaintenanceReason = "node-status";

enum class NodeStatus { kHealthy, kDegraded, kMaintenance };
std::string_view NodeStatusName(NodeStatus status);
std::optional<NodeStatus> ParseNodeStatus(std::string_view name);

// Which nodes: those of one database (its db tag), or of every database
// (each row names its own; "" is the series without a db tag).
struct NodeScope {
  std::optional<std::string> database;  // nullopt: every database
};

struct NodeRow {
  std::string database;  // the db tag; empty: none
  std::string node, region, cluster, sku;
  // At the node's last report (its last `node` point): GPUs that reported,
  // GPUs it should have, its driver and kernel, its health and maintenance
  // flags. 0, "" and false when it never reported.
  int64_t gpus_seen = 0, gpus_expected = 0;
  std::string driver, kernel;
  bool agent_healthy = false, agent_maintenance = false;
  int64_t last_report_ns = 0;  // 0: never
  NodeStatus status = NodeStatus::kHealthy;
  // The status set by a person or a rule, if one is in force (degraded or
  // maintenance): when, by whom and why.
  bool status_set = false;
  int64_t status_since_ns = 0;
  std::string status_actor, status_reason;
};

// Every node of `scope` that has `node` points, in (database, node) order.
// Nodes with only an action but no point are not listed.
Status ListNodes(Db* db, const NodeScope& scope, std::vector<NodeRow>* out);

// The node named `node`: NotFound when no database of `scope` has it,
// InvalidArgument naming the databases when several do and the scope is
// every database.
Status FindNode(Db* db, const NodeScope& scope, std::string_view node, NodeRow* out);

// A GPU of a node at its last report: the last value of each numeric `gpu`
// field (fields in name order) and the job it ran then ("" when idle).
struct GpuRow {
  std::string gpu, sku;
  int64_t last_report_ns = 0;
  std::vector<std::pair<std::string, double>> latest;
  std::string job;
};

// The GPUs of `row`'s node, in GPU index order.
Status ListNodeGpus(Db* db, const NodeRow& row, std::vector<GpuRow>* out);

// The latest value of every numeric field of every GPU of `scope` reported
// in [since_ns, now], restricted to the GPUs whose tags match every one of
// `match` and, when `fields` is not empty, to those fields. At most `limit`
// GPUs; *truncated says whether more were left out.
struct LatestGpu {
  std::string database, node, gpu, region, cluster, sku;
  int64_t last_report_ns = 0;
  std::vector<std::pair<std::string, double>> latest;
};
Status LatestGpuValues(Db* db, const NodeScope& scope, const std::vector<TagMatcher>& match,
                       const std::vector<std::string>& fields, int64_t since_ns, int64_t now_ns,
                       size_t limit, std::vector<LatestGpu>* out, bool* truncated);

// A node's GPUs' fields over [start_ns, end_ns) in steps of step_ns: per
// GPU and field, the mean of each step with points (the largest value for
// `xid`, whose codes are not to be averaged), at the step's start.
// InvalidArgument when the range holds more than max_steps steps or a field
// is not a numeric `gpu` field.
struct GpuFieldSeries {
  std::string gpu, field;
  std::vector<std::pair<int64_t, double>> points;  // (step start ns, value)
};
Status NodeGpuSeries(Db* db, const NodeRow& row, const std::vector<std::string>& fields,
                     int64_t start_ns, int64_t end_ns, int64_t step_ns, int64_t max_steps,
                     std::vector<GpuFieldSeries>* out);

// One entry of the audit trail.
struct NodeAction {
  std::string database, node;
  int64_t time_ns = 0;
  std::string action;  // "status" (a person's PUT) or a rule action ("degrade")
  std::string before, after;
  std::string actor;  // "token:<name>", "anonymous", "rule:<name>"
  std::string reason;
};

// Sets node `node` of `scope` to `after` as of now_ns and records the
// change (action->action, actor and reason are the caller's; the rest of
// *action is filled in: before, the node, the time). Writes the maintenance
// window's start or end when the node enters or leaves maintenance. Changes
// are made one at a time, so each one's `before` is the one before it. A
// rule's action (action->action other than "status") changes only a node
// with no status set: *changed is false, and nothing is written, when a
// person's or an earlier rule's status stands. Errors as FindNode's, or the
// write's.
Status SetNodeStatus(Db* db, const NodeScope& scope, std::string_view node, NodeStatus after,
                     int64_t now_ns, NodeAction* action, bool* changed);

// The audit trail of `scope` over [start_ns, end_ns), newest first; of one
// node when `node` is not empty. At most `limit` entries.
Status ListNodeActions(Db* db, const NodeScope& scope, std::string_view node, int64_t start_ns,
                       int64_t end_ns, size_t limit, std::vector<NodeAction>* out);

}  // namespace gpulse::query
