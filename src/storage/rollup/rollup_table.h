#pragma once

// The machinery every rollup shares (span groups: span_rollup.h; exception
// groups: exception_rollup.h): three tables of one shape — deltas that each
// commit appends at minute resolution, and one row per key per minute and
// per hour — folded by the writer every few seconds. A rollup is described
// by a Traits type:
//
//   using Key = ...;    // ordered; has project_id and bucket_ns
//   using Value = ...;  // Merge(const Value&), Subtract(const Value&), bool Empty()
//   static constexpr const char* kSelect;  // its columns, key first
//   static Status Read(const RowView&, Key*, Value*);  // a row of kSelect
//   static Status Append(RollupSession*, const char* table, const std::map<Key, Value>&);

#include <algorithm>
#include <array>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "storage/schema.h"
#include "storage/sql/sql_connection.h"

namespace sightline::rollup {

inline constexpr int64_t kMinuteNs = 60LL * 1000 * 1000 * 1000;
inline constexpr int64_t kHourNs = 60 * kMinuteNs;

//! Floor of t to a multiple of width (also for negative t).
inline int64_t FloorTo(int64_t t, int64_t width) {
  int64_t q = t / width;
  if (t % width != 0 && t < 0) --q;
  return q * width;
}

namespace internal {

//! A batch's rows grouped by two integers and N texts viewed in the batch
//! (which must outlive it): a rollup's first pass over a batch, one hash
//! lookup per row, before its groups go into the ordered map with string keys
//! (one key built per group rather than per row).
template <typename Value, size_t N>
class BatchGroups {
 public:
  using Texts = std::array<std::string_view, N>;

  Value& Find(int64_t a, int64_t b, const Texts& texts) { return groups_[Key{a, b, texts}]; }

  //! f(a, b, texts, value) for every group, in no particular order.
  template <typename F>
  void ForEach(F&& f) const {
    for (const auto& [k, v] : groups_) f(k.a, k.b, k.texts, v);
  }

 private:
  struct Key {
    int64_t a, b;
    Texts texts;
    bool operator==(const Key&) const = default;
  };
  struct Hash {
    size_t operator()(const Key& k) const {
      uint64_t h = static_cast<uint64_t>(k.a) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(k.b);
      for (std::string_view t : k.texts) h = (h ^ std::hash<std::string_view>()(t)) * 0x100000001B3ull;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<Key, Value, Hash> groups_;
};

}  // namespace internal

//! What folding needs of an engine: its connection, inside a transaction the
//! caller opened.
class RollupSession {
 public:
  virtual ~RollupSession() = default;
  virtual Status Query(const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row) = 0;
  virtual Status Exec(const std::string& sql, const std::vector<SqlParam>& params) = 0;
  virtual Status Append(const char* table, std::span<const schema::Column> columns, size_t rows) = 0;
};

//! The three tables of one rollup.
struct RollupTables {
  //! Null for a rollup whose writer folds from memory (metrics): no table,
  //! nothing to compact, nothing for a read to add.
  const char* delta;
  const char* minute;
  const char* hour;
};

//! CREATE TABLE IF NOT EXISTS for a rollup's three tables (of `columns`)
//! and its one-row state table (complete_from_ns).
std::vector<std::string> CreateRollupSql(const RollupTables& t, const char* state_table,
                                         std::span<const schema::Column> columns, const schema::TypeNames& types);
//! Writes the state row if there is none: the lowest time when every
//! `newest_sql` (a "SELECT max(time column) FROM table") finds nothing, else
//! the hour after the newest row. A database that had rows before its
//! rollups existed reads those rows raw.
Status InitRollupState(RollupSession* s, const char* state_table, std::initializer_list<const char*> newest_sql);

//! Calls fn(key, value) for every row `sql` selects (Traits::kSelect).
template <typename Traits, typename Fn>
Status ReadRows(RollupSession* s, const std::string& sql, const std::vector<SqlParam>& params, Fn fn) {
  Status row_status;
  SL_RETURN_IF_ERROR(s->Query(sql, params, [&](const RowView& r) {
    if (!row_status.ok()) return;
    typename Traits::Key k;
    typename Traits::Value v;
    row_status = Traits::Read(r, &k, &v);
    if (row_status.ok()) fn(std::move(k), v);
  }));
  return row_status;
}

//! A Traits may also name an integer key column that narrows a fold to the
//! keys it touches (static constexpr const char* kNarrowColumn, and
//! static int64_t NarrowValue(const Key&)): where a bucket holds many keys
//! (a metric minute holds a row per series), a fold that touched a few of
//! them reads and rewrites only those, not the whole bucket.
template <typename Traits>
concept NarrowedRollup = requires(const typename Traits::Key& k) {
  { Traits::kNarrowColumn } -> std::convertible_to<const char*>;
  { Traits::NarrowValue(k) } -> std::convertible_to<int64_t>;
};

//! The connection's temporary table of a NarrowedRollup fold's values, in
//! the fold's transaction: a semi-join against it costs one pass over the
//! bucket's rows, where tens of thousands of literals in the statement took
//! ~100 ms per 4,096 (measured).
inline constexpr const char* kFoldKeysTable = "rollup_fold_keys";
//! Empties kFoldKeysTable (creating it on the connection's first fold) and
//! appends `values` to it.
Status StageFoldKeys(RollupSession* s, const std::vector<int64_t>& values);

//! Merges the rows of `table` at the (project, bucket) pairs of `level`
//! (and `where`, " AND ..." over the table; for a NarrowedRollup, only its
//! column's values in `level`) into it, deletes them, and appends the merged
//! rows that still hold anything. The read and the delete share one
//! condition, so what it selects beyond `level`'s keys is rewritten as it was.
template <typename Traits>
Status FoldInto(RollupSession* s, const char* table, std::map<typename Traits::Key, typename Traits::Value>* level,
                const std::string& where = "") {
  std::map<int64_t, std::set<int64_t>> buckets;  // project -> buckets touched
  for (const auto& [k, v] : *level) buckets[k.project_id].insert(k.bucket_ns);
  std::string narrow;
  if constexpr (NarrowedRollup<Traits>) {
    std::vector<int64_t> values;
    values.reserve(level->size());
    for (const auto& [k, v] : *level) values.push_back(Traits::NarrowValue(k));
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    SL_RETURN_IF_ERROR(StageFoldKeys(s, values));
    narrow = std::string(" AND ") + Traits::kNarrowColumn + " IN (SELECT k FROM " + kFoldKeysTable + ")";
  }
  constexpr size_t kChunk = 256;  // bounded statements
  for (const auto& [project, set] : buckets) {
    const std::vector<int64_t> all(set.begin(), set.end());
    for (size_t i = 0; i < all.size(); i += kChunk) {
      const size_t n = std::min(kChunk, all.size() - i);
      // The range as well as the list: a plain comparison lets zone maps skip
      // row groups even where an IN list is not pushed down.
      std::string cond = " WHERE project_id = ? AND bucket_ns BETWEEN ? AND ?" + where + " AND bucket_ns IN (";
      std::vector<SqlParam> params(n + 3);
      params[0] = project;
      params[1] = all[i];
      params[2] = all[i + n - 1];
      for (size_t j = 0; j < n; ++j) {
        cond += j ? ", ?" : "?";
        params[j + 3] = all[i + j];
      }
      cond += ")" + narrow;
      SL_RETURN_IF_ERROR(ReadRows<Traits>(s, std::string("SELECT ") + Traits::kSelect + " FROM " + table + cond, params,
                                          [&](auto k, const auto& v) { (*level)[k].Merge(v); }));
      SL_RETURN_IF_ERROR(s->Exec(std::string("DELETE FROM ") + table + cond, params));
    }
  }
  if constexpr (NarrowedRollup<Traits>) SL_RETURN_IF_ERROR(StageFoldKeys(s, {}));
  std::erase_if(*level, [](const auto& kv) { return kv.second.Empty(); });
  return Traits::Append(s, table, *level);
}

//! The deltas (those `where` selects) folded into the minute and hour
//! tables, and deleted. Returns the number of delta rows folded.
template <typename Traits>
Result<int64_t> Compact(RollupSession* s, const RollupTables& t, const std::string& where = "") {
  if (t.delta == nullptr) return int64_t{0};
  std::map<typename Traits::Key, typename Traits::Value> minutes, hours;
  int64_t deltas = 0;
  const std::string cond = where.empty() ? "" : " WHERE 1 = 1" + where;
  SL_RETURN_IF_ERROR(ReadRows<Traits>(s, std::string("SELECT ") + Traits::kSelect + " FROM " + t.delta + cond, {},
                                      [&](auto k, const auto& v) {
                                        minutes[k].Merge(v);
                                        ++deltas;
                                      }));
  if (deltas == 0) return int64_t{0};
  for (const auto& [k, v] : minutes) {
    typename Traits::Key h = k;
    h.bucket_ns = FloorTo(k.bucket_ns, kHourNs);
    hours[h].Merge(v);
  }
  SL_RETURN_IF_ERROR(FoldInto<Traits>(s, t.minute, &minutes, where));
  SL_RETURN_IF_ERROR(FoldInto<Traits>(s, t.hour, &hours, where));
  SL_RETURN_IF_ERROR(s->Exec(std::string("DELETE FROM ") + t.delta + cond, {}));
  return deltas;
}

//! Retention's share, in the transaction that then deletes the rows of
//! `project_filter`'s projects (" AND project_id ...", over every table)
//! older than before_ns: folds the deltas, deletes every bucket that starts
//! by before_ns, and rebuilds the minute holding before_ns from the rows
//! that stay (raw(from, to, &map) adds those in [from, to) at minute
//! resolution) and the hour holding it from its minutes. So every bucket
//! adds up to the rows that remain, extremes included.
template <typename Traits, typename RawFn>
Status Expire(RollupSession* s, const RollupTables& t, const std::string& where, const std::string& project_filter,
              int64_t before_ns, RawFn raw) {
  Result<int64_t> folded = Compact<Traits>(s, t, where);
  if (!folded.ok()) return folded.status();
  const int64_t minute = FloorTo(before_ns, kMinuteNs), hour = FloorTo(before_ns, kHourNs);
  for (auto [table, last_dropped] : {std::pair{t.minute, minute}, std::pair{t.hour, hour}}) {
    SL_RETURN_IF_ERROR(s->Exec(std::string("DELETE FROM ") + table + " WHERE bucket_ns <= ?" + where + project_filter,
                               {last_dropped}));
  }
  // The hour from its later minutes, read before the rebuilt minute is
  // appended (an engine may not show appended rows until the commit).
  std::map<typename Traits::Key, typename Traits::Value> minutes, hours;
  SL_RETURN_IF_ERROR(ReadRows<Traits>(s,
                                      std::string("SELECT ") + Traits::kSelect + " FROM " + t.minute +
                                          " WHERE bucket_ns > ? AND bucket_ns < ?" + where + project_filter,
                                      {minute, hour + kHourNs}, [&](auto k, const auto& v) {
                                        k.bucket_ns = hour;
                                        hours[k].Merge(v);
                                      }));
  SL_RETURN_IF_ERROR(raw(before_ns, minute + kMinuteNs, &minutes));
  for (const auto& [k, v] : minutes) {
    typename Traits::Key h = k;
    h.bucket_ns = hour;
    hours[h].Merge(v);
  }
  SL_RETURN_IF_ERROR(FoldInto<Traits>(s, t.minute, &minutes, where));
  return FoldInto<Traits>(s, t.hour, &hours, where);
}

//! A rollup retention longer than the rows' (the rows may be gone): folds
//! the deltas, then deletes every minute and hour bucket of the whole hours
//! before before_ns (of `where` and `project_filter`'s projects). The hour
//! holding before_ns stays whole in both levels, so they agree.
template <typename Traits>
Status DropHoursBefore(RollupSession* s, const RollupTables& t, const std::string& where,
                       const std::string& project_filter, int64_t before_ns) {
  Result<int64_t> folded = Compact<Traits>(s, t, where);
  if (!folded.ok()) return folded.status();
  const int64_t hour = FloorTo(before_ns, kHourNs);
  for (const char* table : {t.minute, t.hour}) {
    SL_RETURN_IF_ERROR(
        s->Exec(std::string("DELETE FROM ") + table + " WHERE bucket_ns < ?" + where + project_filter, {hour}));
  }
  return Status::Ok();
}

}  // namespace sightline::rollup
