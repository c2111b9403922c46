#include "storage/duckdb/log_token_index.h"

#include <algorithm>
#include <cstring>

// Header-only mode, as common/hash.cc: a token's hash is the inlined
// short-input path.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "storage/duckdb/appender_chunk.h"
#include "storage/sql/retention_sql.h"

namespace sightline::duckdb_index {

namespace {

constexpr const char* kDictionary = "log_token_dict";
constexpr size_t kMinSlots = 1024;  // a power of two, as every size of the table
constexpr uint64_t kTagBits = 0xFFFFFFFF00000000ull;

uint64_t HashKey(std::string_view token, int64_t minute) {
  return XXH3_64bits_withSeed(token.data(), token.size(), static_cast<uint64_t>(minute));
}

//! minute of time_ns in SQL, as MinuteOf (DuckDB's // truncates toward zero).
constexpr const char* kMinuteSql =
    "(CASE WHEN time_ns >= 0 THEN time_ns // 60000000000 ELSE (time_ns + 1) // 60000000000 - 1 END)";

}  // namespace

// Lookups filter on token (an IN list): runs sorted on it keep each token's
// rows in one or two row groups.
const RunTableDef kLogTokens{
    "log_tokens", "log_tokens_tail", "DISTINCT project_id, token, minute", "", "token, project_id, minute",
};

std::string NeedleOf(std::string_view text) {
  std::string best, run;
  for (size_t i = 0; i <= text.size(); ++i) {
    const auto c = i < text.size() ? static_cast<unsigned char>(text[i]) : 0;
    if (i < text.size() && internal::IsAsciiWord(c)) {
      run.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 0x20) : static_cast<char>(c));
      continue;
    }
    // A run of digits alone is no needle: such runs are not stored.
    if (run.size() > best.size() && !internal::AllDigits(run)) best = run;
    run.clear();
  }
  if (best.size() > kMaxNeedleBytes) best.resize(kMaxNeedleBytes);
  return best;
}

Status CreateLogTokenIndex(duckdb_connection conn) {
  Result<bool> exists = TableExists(conn, kLogTokens.runs);
  if (!exists.ok()) return exists.status();
  SL_RETURN_IF_ERROR(Exec(conn, "BEGIN TRANSACTION"));
  Status s = Exec(conn, std::string("CREATE TABLE IF NOT EXISTS ") + kLogTokens.tail +
                            " (project_id BIGINT, token VARCHAR, minute BIGINT)");
  if (s.ok()) {
    s = Exec(conn, std::string("CREATE TABLE IF NOT EXISTS ") + kLogTokens.runs +
                       " (project_id BIGINT, token VARCHAR, minute BIGINT, run BIGINT)");
  }
  if (s.ok()) {
    s = Exec(conn, std::string("CREATE TABLE IF NOT EXISTS ") + kDictionary + " (project_id BIGINT, token VARCHAR)");
  }
  if (s.ok() && !*exists) {
    // lower() then a split on everything but [a-z0-9] gives the maximal
    // ASCII letter-and-digit runs of lower(body); those with a letter are
    // the tokens Tokenize makes, whole (no windows, no cap), which only ever
    // finds more.
    s = Exec(conn, std::string("INSERT INTO ") + kLogTokens.runs +
                       " SELECT DISTINCT project_id, token, minute, 1 FROM (SELECT project_id, " + kMinuteSql +
                       " AS minute, unnest(string_split_regex(lower(body), '[^a-z0-9]+')) AS token FROM logs) "
                       "WHERE regexp_matches(token, '[a-z]') ORDER BY token, project_id, minute");
    if (s.ok()) {
      s = Exec(conn, std::string("INSERT INTO ") + kDictionary + " SELECT DISTINCT project_id, token FROM " +
                         kLogTokens.runs);
    }
  }
  if (!s.ok()) {
    (void)Exec(conn, "ROLLBACK");
    return s;
  }
  return Exec(conn, "COMMIT");
}

Status AddTailTokensToDictionary(duckdb_connection conn) {
  return Exec(conn, std::string("INSERT INTO ") + kDictionary + " SELECT DISTINCT project_id, token FROM " +
                        kLogTokens.tail + " t WHERE token <> '' AND NOT EXISTS (SELECT 1 FROM " + kDictionary +
                        " d WHERE d.project_id = t.project_id AND d.token = t.token)");
}

Status ExpireLogTokens(duckdb_connection conn, const ProjectSet& projects, int64_t before_ns) {
  // Minute m has expired once it ends, (m + 1) * kMinuteNs, at or before
  // before_ns: m < floor(before_ns / kMinuteNs).
  const std::string where =
      " WHERE minute < " + std::to_string(MinuteOf(before_ns)) + " AND minute <> 0" + sql::ProjectFilterSql(projects);
  SL_RETURN_IF_ERROR(Exec(conn, std::string("DELETE FROM ") + kLogTokens.runs + where));
  return Exec(conn, std::string("DELETE FROM ") + kLogTokens.tail + where);
}

sql::Sql CandidateTokensSql(int64_t project_id, const std::string& needle) {
  sql::Sql sql;
  sql << "SELECT DISTINCT token FROM (";
  for (const char* table : {kDictionary, kLogTokens.tail}) {
    if (table != kDictionary) sql << " UNION ALL ";
    sql << "SELECT token FROM " << table << " WHERE project_id = ";
    sql.Bind(project_id);
    sql << " AND contains(token, ";
    sql.Bind(needle);
    sql << ")";
  }
  sql << ") LIMIT ";
  sql.Bind(kMaxCandidateTokens + 1);
  return sql;
}

sql::Sql MinutesSql(int64_t project_id, const std::vector<std::string>& tokens, int64_t from_minute,
                    int64_t to_minute) {
  sql::Sql sql;
  sql << "SELECT DISTINCT minute FROM (";
  for (const char* table : {kLogTokens.runs, kLogTokens.tail}) {
    if (table != kLogTokens.runs) sql << " UNION ALL ";
    sql << "SELECT minute FROM " << table << " WHERE token IN (''";
    for (const std::string& t : tokens) {
      sql << ", ";
      sql.Bind(t);
    }
    sql << ") AND project_id = ";
    sql.Bind(project_id);
    sql << " AND minute >= ";
    sql.Bind(from_minute);
    sql << " AND minute <= ";
    sql.Bind(to_minute);
  }
  sql << ") ORDER BY minute DESC";
  return sql;
}

LogTokenSet::LogTokenSet(const LogBatch& b) {
  // An open-addressing set of indexes into entries_: one hash and, mostly,
  // one probe per token, with no node to allocate. A slot holds an entry's
  // index plus one in its low half (0: empty) and its hash's top bits in the
  // high half, so a probe compares bytes only on a likely match. At most half
  // full.
  std::vector<uint64_t> slots(kMinSlots, 0);
  const auto place = [&slots](uint64_t h, size_t index) {
    const size_t mask = slots.size() - 1;
    size_t at = h & mask;
    while (slots[at] != 0) at = (at + 1) & mask;
    slots[at] = (h & kTagBits) | (index + 1);
  };
  std::string scratch;
  for (size_t i = 0; i < b.rows(); ++i) {
    const int64_t minute = MinuteOf(b.time_ns[i]);
    Tokenize(b.body.Get(i), &scratch, [&](std::string_view t) {
      const uint64_t h = HashKey(t, minute);
      const size_t mask = slots.size() - 1;
      for (size_t at = h & mask; slots[at] != 0; at = (at + 1) & mask) {
        if ((slots[at] & kTagBits) != (h & kTagBits)) continue;
        const size_t k = (slots[at] & ~kTagBits) - 1;
        if (entries_[k].minute == minute && token(k) == t) return;
      }
      entries_.push_back(Entry{static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(t.size()), minute});
      bytes_.append(t);
      if (entries_.size() * 2 <= slots.size()) {
        place(h, entries_.size() - 1);
        return;
      }
      slots.assign(slots.size() * 2, 0);
      for (size_t k = 0; k < entries_.size(); ++k) place(HashKey(token(k), entries_[k].minute), k);
    });
  }
  // It waits in the writer's queue: hold no more than it needs.
  bytes_.shrink_to_fit();
  entries_.shrink_to_fit();
}

std::shared_ptr<const LogTokenSet> TokensOf(const LogBatch& b) {
  if (auto prepared = std::dynamic_pointer_cast<const LogTokenSet>(b.prepared)) return prepared;
  return std::make_shared<const LogTokenSet>(b);
}

Result<uint64_t> AppendLogTokens(duckdb_appender appender, int64_t project_id, const LogTokenSet& set) {
  constexpr duckdb_type kTypes[] = {DUCKDB_TYPE_BIGINT, DUCKDB_TYPE_VARCHAR, DUCKDB_TYPE_BIGINT};
  AppenderChunk chunk(kTypes);
  SL_RETURN_IF_ERROR(chunk.Append(appender, set.size(), "log_tokens_tail", [&](size_t begin, size_t n) {
    auto* project = chunk.data<int64_t>(0);
    duckdb_vector tokens = chunk.vector(1);
    auto* minute = chunk.data<int64_t>(2);
    for (size_t j = 0; j < n; ++j) {
      const std::string_view token = set.token(begin + j);
      project[j] = project_id;
      duckdb_vector_assign_string_element_len(tokens, j, token.data(), token.size());
      minute[j] = set.minute(begin + j);
    }
  }));
  return static_cast<uint64_t>(set.size());
}

}  // namespace sightline::duckdb_index
