// The DuckDB engine's own indexes (duckdb_indexes.h): the tokenizer and
// needle rules, compaction into sorted runs and their merging, backfill at
// open of a database that predates them, retention, and that lookups do
// read through the indexes (an index row removed by hand hides its rows).
// The read conformance suite checks the answers against the reference.

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/memory_size.h"
#include "common/testing/temp_dir.h"
#include "model/batch.h"
#include "storage/duckdb/duckdb_store.h"
#include "storage/duckdb/log_token_index.h"
#include "storage/duckdb/sorted_runs.h"
#include "storage/duckdb/trace_index.h"
#include "storage/sql/sql_reader.h"
#include "storage/telemetry_reader.h"
#include "storage/telemetry_store.h"

namespace sightline {
namespace {

using duckdb_index::kMaxTokensPerRecord;
using duckdb_index::kMinuteNs;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int64_t kSecondNs = 1'000'000'000;
constexpr int64_t kProject = 1;

std::vector<std::string> Tokens(std::string_view body) {
  std::vector<std::string> out;
  std::string scratch;
  duckdb_index::Tokenize(body, &scratch, [&](std::string_view t) { out.emplace_back(t); });
  return out;
}

TEST(LogTokenIndexTest, TokensAreLowerCasedAsciiWordRuns) {
  EXPECT_EQ(Tokens("GET /api/v1 failed: card_declined (x2) after 250 ms"),
            (std::vector<std::string>{"get", "api", "v1", "failed", "card", "declined", "x2", "after", "ms"}));
  // Non-ASCII characters separate, except the two lower() maps into ASCII.
  EXPECT_EQ(Tokens("Émile ЖУРНАЛ İstanbul 5\u212A"), (std::vector<std::string>{"mile", "istanbul", "5k"}));
  EXPECT_TRUE(Tokens(" -- ").empty());
}

TEST(LogTokenIndexTest, LongTokensAreWindowsThatHoldEveryNeedle) {
  std::string token;
  for (int i = 0; i < 50; ++i) token.push_back(static_cast<char>('a' + i % 26));
  const std::vector<std::string> windows = Tokens(token);
  ASSERT_GT(windows.size(), 1u);
  for (const std::string& w : windows) EXPECT_EQ(w.size(), duckdb_index::kMaxTokenBytes);
  for (size_t at = 0; at + duckdb_index::kMaxNeedleBytes <= token.size(); ++at) {
    const std::string needle = token.substr(at, duckdb_index::kMaxNeedleBytes);
    bool found = false;
    for (const std::string& w : windows) found = found || w.find(needle) != std::string::npos;
    EXPECT_TRUE(found) << needle;
  }
}

TEST(LogTokenIndexTest, ARecordPastTheCapEndsWithTheOverflowToken) {
  std::string body;
  for (size_t i = 0; i < kMaxTokensPerRecord + 5; ++i) body += "w" + std::to_string(i) + " ";
  const std::vector<std::string> tokens = Tokens(body);
  ASSERT_EQ(tokens.size(), kMaxTokensPerRecord + 1);
  EXPECT_EQ(tokens.back(), "");
}

// The tokens by their definition, the slow way: lower() the body (ASCII, and
// the two characters it maps into ASCII), split it on every other byte, keep
// the runs with a letter. Short bodies only: no windows, no cap.
std::vector<std::string> ReferenceTokens(std::string_view body) {
  std::string lowered;
  for (size_t i = 0; i < body.size();) {
    const auto c = static_cast<unsigned char>(body[i]);
    if (body.substr(i).starts_with("\xC4\xB0")) {
      lowered += 'i';
      i += 2;
    } else if (body.substr(i).starts_with("\xE2\x84\xAA")) {
      lowered += 'k';
      i += 3;
    } else {
      const bool word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      lowered += word ? static_cast<char>(c >= 'A' && c <= 'Z' ? c + 0x20 : c) : ' ';
      ++i;
    }
  }
  std::vector<std::string> out;
  std::string run;
  for (const char c : lowered + ' ') {
    if (c != ' ') {
      run += c;
      continue;
    }
    if (run.find_first_not_of("0123456789") != std::string::npos) out.push_back(run);
    run.clear();
  }
  return out;
}

TEST(LogTokenIndexTest, TokensMatchTheirDefinitionOnRandomBytes) {
  // Bytes that matter to the tokenizer, the two wide letters' own bytes and
  // their neighbours among them, so runs start, end and cut mid-character.
  const std::vector<std::string> pieces = {"a",        "Z",    "q",        "0",    "7",    " ",    "_",
                                           "\xC4",     "\xB0", "\xC4\xB0", "\xE2", "\x84", "\xAA", "\xE2\x84\xAA",
                                           "\xC3\xA9", "\xFF"};
  std::mt19937 rng(13);
  for (int round = 0; round < 20000; ++round) {
    std::string body;
    const size_t n = rng() % 12;
    for (size_t i = 0; i < n; ++i) body += pieces[rng() % pieces.size()];
    EXPECT_EQ(Tokens(body), ReferenceTokens(body)) << body;
  }
}

// The tokenizer reads 16 bytes at a time until one of the two wide letters'
// lead bytes comes, then goes on a byte at a time: the runs must be the same
// as reading every byte, wherever runs start, end and cross 16-byte blocks.
TEST(LogTokenIndexTest, BlockwiseRunsAreTheBytewiseRuns) {
  const std::vector<std::string> pieces = {"a",
                                           "Z",
                                           "q",
                                           "M",
                                           "0",
                                           "7",
                                           " ",
                                           "_",
                                           "-",
                                           "@",
                                           "[",
                                           "`",
                                           "{",
                                           "\xC3\xA9",
                                           "\xFF",
                                           "\x80",
                                           std::string(1, '\0'),
                                           "\xC4\xB0",
                                           "\xE2\x84\xAA"};
  std::mt19937 rng(17);
  auto runs = [](std::string_view body, bool bytewise) {
    std::vector<std::string> out;
    std::string scratch;
    const auto keep = [&](std::string_view r) {
      out.emplace_back(r);
      return true;
    };
    if (bytewise) {
      duckdb_index::internal::ForEachRunBytewise(body, &scratch, keep);
    } else {
      duckdb_index::internal::ForEachRun(body, &scratch, keep);
    }
    return out;
  };
  for (int round = 0; round < 20000; ++round) {
    std::string body;
    const size_t n = rng() % 120;
    // Most bodies ASCII and plain bytes past it; some with a wide letter.
    const size_t kinds = round % 4 == 0 ? pieces.size() : pieces.size() - 2;
    for (size_t i = 0; i < n; ++i) {
      const size_t k = rng() % (kinds + 6);
      body += k < kinds ? pieces[k] : std::string(rng() % 20, "abcdEFGH1234xyzZ"[rng() % 16]);
    }
    ASSERT_EQ(runs(body, false), runs(body, true)) << body;
  }
  // A stop asked for by the caller ends the runs there, in either reader,
  // before or after a wide letter sends the rest a byte at a time.
  for (const int wide_at : {0, 30}) {
    std::string body;
    for (int i = 0; i < 40; ++i) body += "word" + std::to_string(i) + (i == wide_at ? " \xC4\xB0 " : " ");
    std::vector<std::string> want = runs(body, true);
    want.resize(3);
    for (const bool bytewise : {false, true}) {
      std::vector<std::string> out;
      std::string scratch;
      const auto three = [&](std::string_view r) {
        out.emplace_back(r);
        return out.size() < 3;
      };
      if (bytewise) {
        duckdb_index::internal::ForEachRunBytewise(body, &scratch, three);
      } else {
        duckdb_index::internal::ForEachRun(body, &scratch, three);
      }
      EXPECT_EQ(out, want) << wide_at;
    }
  }
}

TEST(LogTokenIndexTest, TheNeedleIsTheLongestAsciiRunCut) {
  EXPECT_EQ(duckdb_index::NeedleOf("Card_DECLINED now"), "declined");
  EXPECT_EQ(duckdb_index::NeedleOf("Émile"), "mile");
  EXPECT_EQ(duckdb_index::NeedleOf("журнал"), "");
  EXPECT_EQ(duckdb_index::NeedleOf(" : "), "");
  EXPECT_EQ(duckdb_index::NeedleOf("12345 ab"), "ab");  // runs of digits alone are not stored
  EXPECT_EQ(duckdb_index::NeedleOf("#12345"), "");
  EXPECT_EQ(duckdb_index::NeedleOf("abcdefghijklmnopqrstuvwxyz"), "abcdefghijklmnop");
}

TEST(LogTokenIndexTest, MinutesBecomeJoinedRangesNewestFirst) {
  const TimeRange range{5 * kMinuteNs + 7, 20 * kMinuteNs};
  const std::vector<TimeRange> ranges = sql::RangesOfMinutes({30, 12, 11, 10, 5}, range);
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0].from_ns, 10 * kMinuteNs);
  EXPECT_EQ(ranges[0].to_ns, 13 * kMinuteNs);
  EXPECT_EQ(ranges[1].from_ns, 5 * kMinuteNs + 7);
  EXPECT_EQ(ranges[1].to_ns, 6 * kMinuteNs);
  std::vector<int64_t> many;
  for (int64_t m = 1000; m > 0; m -= 2) many.push_back(m);
  const std::vector<TimeRange> capped = sql::RangesOfMinutes(many, {0, 2000 * kMinuteNs});
  EXPECT_EQ(capped.size(), sql::kMaxLogReadRanges);
  EXPECT_EQ(capped.front().to_ns, 1001 * kMinuteNs);
  EXPECT_EQ(capped.back().from_ns, 2 * kMinuteNs);
}

SpanBatch Spans(const std::vector<std::pair<TraceId, int64_t>>& spans) {
  SpanBatch b;
  b.project_id = kProject;
  b.resources.resource_id.push_back(1);
  b.resources.resource_attributes.Append(R"({"service.name":"svc"})");
  b.resources.scope_name.Append("");
  b.resources.scope_version.Append("");
  b.resources.scope_attributes.Append("{}");
  uint64_t span_id = 1;
  for (const auto& [trace, start] : spans) {
    b.trace_id_high.push_back(trace.high);
    b.trace_id_low.push_back(trace.low);
    b.span_id.push_back(span_id++);
    b.parent_span_id.push_back(0);
    b.trace_state.Append("");
    b.flags.push_back(0);
    b.name.Append("op");
    b.kind.push_back(2);
    b.start_time_ns.push_back(start);
    b.end_time_ns.push_back(start + 1000);
    b.status_code.push_back(0);
    for (StringColumn* c : {&b.status_message, &b.service_name, &b.http_route, &b.http_method, &b.db_system,
                            &b.exception_type, &b.exception_message, &b.exception_group, &b.events, &b.links}) {
      c->Append(c == &b.service_name ? "svc" : "");
    }
    b.http_status_code.push_back(0);
    b.attributes.Append("{}");
    b.dropped_attributes_count.push_back(0);
    b.dropped_events_count.push_back(0);
    b.dropped_links_count.push_back(0);
    b.resource_id.push_back(1);
  }
  return b;
}

struct LogRow {
  int64_t time;
  std::string body;
  TraceId trace;
};

LogBatch Logs(const std::vector<LogRow>& rows) {
  LogBatch b;
  b.project_id = kProject;
  b.resources.resource_id.push_back(1);
  b.resources.resource_attributes.Append(R"({"service.name":"svc"})");
  b.resources.scope_name.Append("");
  b.resources.scope_version.Append("");
  b.resources.scope_attributes.Append("{}");
  for (const LogRow& r : rows) {
    b.time_ns.push_back(r.time);
    b.observed_time_ns.push_back(r.time);
    b.severity_number.push_back(9);
    b.severity_text.Append("INFO");
    b.body.Append(r.body);
    b.body_type.push_back(1);
    b.trace_id_high.push_back(r.trace.high);
    b.trace_id_low.push_back(r.trace.low);
    b.span_id.push_back(0);
    b.flags.push_back(0);
    b.service_name.Append("svc");
    b.attributes.Append("{}");
    b.dropped_attributes_count.push_back(0);
    b.resource_id.push_back(1);
    for (StringColumn* c : {&b.event_name, &b.exception_type, &b.exception_message, &b.exception_group}) c->Append("");
  }
  return b;
}

TEST(LogTokenIndexTest, ABatchStoresEachTokenOfAMinuteOnce) {
  const LogBatch b = Logs({{kT0, "Disk FULL on sda1", {}},
                           {kT0 + 1, "disk full on SDA2", {}},
                           {kT0 + kMinuteNs, "disk full", {}},
                           {kT0 + kMinuteNs + 1, "D\xC4\xB0SK 5\xE2\x84\xAA", {}}});
  std::set<std::pair<std::string, int64_t>> want;
  for (size_t i = 0; i < b.rows(); ++i) {
    for (const std::string& t : Tokens(b.body.Get(i))) want.emplace(t, duckdb_index::MinuteOf(b.time_ns[i]));
  }
  std::set<std::pair<std::string, int64_t>> got;
  const duckdb_index::LogTokenSet set(b);
  for (size_t i = 0; i < set.size(); ++i) got.emplace(std::string(set.token(i)), set.minute(i));
  EXPECT_EQ(got, want);
  EXPECT_EQ(set.size(), want.size());  // no pair twice
  EXPECT_TRUE(want.contains({"disk", duckdb_index::MinuteOf(kT0 + kMinuteNs)}));
  EXPECT_TRUE(want.contains({"5k", duckdb_index::MinuteOf(kT0 + kMinuteNs)}));
}

// The set waits in the writer's queue, charged to its request: it holds at
// most twice the bodies' bytes (windows overlap) and 16 bytes a pair, even
// when every token of every record is new.
TEST(LogTokenIndexTest, TheSetHoldsNoMoreThanItsBoundOfTheBodies) {
  std::vector<LogRow> rows;
  size_t body_bytes = 0, most_pairs = 0;
  for (int r = 0; r < 2000; ++r) {
    std::string body;
    for (int t = 0; t < 100; ++t) body += "t" + std::to_string(r * 100 + t) + " ";  // past the cap of 64
    body += std::string(300, 'x');                                                  // windows
    body_bytes += body.size();
    rows.push_back({kT0 + r * kSecondNs, body, {}});
  }
  const LogBatch b = Logs(rows);
  const duckdb_index::LogTokenSet set(b);
  for (size_t i = 0; i < b.rows(); ++i) most_pairs += Tokens(b.body.Get(i)).size();
  EXPECT_GT(set.size(), 2000u * kMaxTokensPerRecord / 2);
  EXPECT_LE(set.size(), most_pairs);
  EXPECT_LE(set.ByteSize(), 2 * body_bytes + 16 * most_pairs);
}

TEST(LogTokenIndexTest, ManyDistinctTokensGrowTheSet) {
  std::vector<LogRow> rows;
  std::set<std::string> want;
  for (int i = 0; i < 5000; ++i) {
    const std::string word = "w" + std::to_string(i);
    rows.push_back({kT0, word + " " + word + " shared", {}});
    want.insert(word);
  }
  want.insert("shared");
  std::set<std::string> got;
  const LogBatch b = Logs(rows);
  const duckdb_index::LogTokenSet set(b);
  for (size_t i = 0; i < set.size(); ++i) got.emplace(set.token(i));
  EXPECT_EQ(got, want);
  EXPECT_EQ(set.size(), want.size());  // no token twice
}

class DuckDbIndexesTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override { Close(); }

  void Open() {
    StoreOptions options;
    options.data_dir = dir_.str();
    options.read_connections = 1;
    Result<std::unique_ptr<TelemetryStore>> store = OpenDuckDbStore(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
  }
  void Close() {
    if (store_ != nullptr) {
      EXPECT_TRUE(store_->Close().ok());
    }
    store_.reset();
  }
  void Write(const SpanBatch& b) {
    Result<std::unique_ptr<SignalSink>> sink = store_->NewSink(Signal::kSpans);
    ASSERT_TRUE(sink.ok());
    ASSERT_TRUE((*sink)->WriteSpans({&b}).ok());
  }
  void Write(const LogBatch& b) {
    Result<std::unique_ptr<SignalSink>> sink = store_->NewSink(Signal::kLogs);
    ASSERT_TRUE(sink.ok());
    ASSERT_TRUE((*sink)->WriteLogs({&b}).ok());
  }
  //! The one integer a query returns.
  int64_t Int(const std::string& sql) {
    Result<SqlResult> r = store_->ExecuteSql(sql);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || r->rows.size() != 1 || !r->rows[0][0]) return -1;
    return std::stoll(*r->rows[0][0]);
  }
  //! The span start times of a trace; empty when GetTrace says NotFound.
  std::vector<int64_t> TraceStarts(const TraceId& id) {
    Result<std::unique_ptr<TelemetryReader>> reader = store_->AcquireReader(1000);
    EXPECT_TRUE(reader.ok());
    Result<TraceDetail> detail = (*reader)->GetTrace({kProject, id});
    std::vector<int64_t> out;
    if (!detail.ok()) {
      EXPECT_EQ(detail.status().code(), StatusCode::kNotFound) << detail.status().ToString();
      return out;
    }
    for (const SpanRecord& s : detail->spans) out.push_back(s.start_ns);
    return out;
  }
  //! The bodies a search returns, newest first.
  std::vector<std::string> Search(const std::string& text) {
    Result<std::unique_ptr<TelemetryReader>> reader = store_->AcquireReader(1000);
    EXPECT_TRUE(reader.ok());
    LogPageQuery q;
    q.filter.project_id = kProject;
    q.filter.range = {kT0 - 24 * 60 * kMinuteNs, kT0 + 60 * kMinuteNs};
    q.filter.text = text;
    Result<LogPage> page = (*reader)->Logs(q);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    std::vector<std::string> out;
    if (page.ok()) {
      for (const LogRecord& r : page->records) out.push_back(r.body);
    }
    return out;
  }

  testing::TempDir dir_;
  std::unique_ptr<TelemetryStore> store_;
};

constexpr TraceId kTraceA{0xa, 1};
constexpr TraceId kTraceB{0xb, 2};

TEST_F(DuckDbIndexesTest, CompactionMovesTheTailIntoARun) {
  Write(Spans({{kTraceA, kT0}, {kTraceB, kT0 + 5}}));
  Write(Spans({{kTraceA, kT0 - 60 * kMinuteNs}}));
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index_tail"), 3);
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index"), 0);
  EXPECT_EQ(TraceStarts(kTraceA), (std::vector<int64_t>{kT0 - 60 * kMinuteNs, kT0}));
  ASSERT_TRUE(store_->ReclaimSpace().ok());
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index_tail"), 0);
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index"), 3);
  EXPECT_EQ(Int("SELECT min(min_s) FROM span_trace_index WHERE trace_id_low = 1"), (kT0 - 60 * kMinuteNs) / kSecondNs);
  EXPECT_EQ(TraceStarts(kTraceA), (std::vector<int64_t>{kT0 - 60 * kMinuteNs, kT0}));
  // A late span lands in the tail; the lookup joins both.
  Write(Spans({{kTraceA, kT0 - 120 * kMinuteNs}}));
  EXPECT_EQ(TraceStarts(kTraceA), (std::vector<int64_t>{kT0 - 120 * kMinuteNs, kT0 - 60 * kMinuteNs, kT0}));
}

TEST_F(DuckDbIndexesTest, FourRunsOfATierMergeIntoOne) {
  for (int i = 0; i < 4; ++i) {
    Write(Spans({{TraceId{static_cast<uint64_t>(i + 1), 7}, kT0 + i}}));
    ASSERT_TRUE(store_->ReclaimSpace().ok());
    EXPECT_EQ(Int("SELECT count(DISTINCT run) FROM span_trace_index"), i < 3 ? i + 1 : 1) << "after run " << i + 1;
  }
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index"), 4);
  // The run sizes survive a reopen: one more run of the same tier makes two.
  Close();
  Open();
  Write(Spans({{TraceId{9, 9}, kT0}}));
  ASSERT_TRUE(store_->ReclaimSpace().ok());
  EXPECT_EQ(Int("SELECT count(DISTINCT run) FROM span_trace_index"), 2);
  EXPECT_EQ(TraceStarts(TraceId{3, 7}), (std::vector<int64_t>{kT0 + 2}));
}

// The key is the id's low half alone: traces that share it share index
// rows, and each still opens with its own spans and log records only.
TEST_F(DuckDbIndexesTest, TracesSharingTheKeyAreToldApartByTheirRows) {
  const TraceId first{0x1111, 42}, second{0x2222, 42};
  Write(Spans({{first, kT0 - 30 * kMinuteNs}, {second, kT0}}));
  Write(Logs({{kT0 - 30 * kMinuteNs, "first's record", first}, {kT0, "second's record", second}}));
  EXPECT_EQ(Int("SELECT count(DISTINCT trace_id_low) FROM span_trace_index_tail"), 1);
  EXPECT_EQ(TraceStarts(first), (std::vector<int64_t>{kT0 - 30 * kMinuteNs}));
  EXPECT_EQ(TraceStarts(second), (std::vector<int64_t>{kT0}));
  Result<std::unique_ptr<TelemetryReader>> reader = store_->AcquireReader(1000);
  ASSERT_TRUE(reader.ok());
  LogPageQuery q;
  q.filter.project_id = kProject;
  q.filter.range = {kT0 - 60 * kMinuteNs, kT0 + kMinuteNs};
  q.filter.trace_id = second;
  Result<LogPage> page = (*reader)->Logs(q);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->records.size(), 1u);
  EXPECT_EQ(page->records[0].body, "second's record");
}

// Rows keep whole seconds, floored, also before 1970 (an unsigned OTLP time
// past 2^63 is a negative int64): the writer in C++ and the backfill in SQL
// agree, and the lookup covers the span either way.
TEST_F(DuckDbIndexesTest, SecondsAreFlooredAlikeByTheWriterAndTheBackfill) {
  constexpr int64_t kBefore1970 = -1'500'000'000;  // -1.5 s: second -2
  Write(Spans({{kTraceA, kBefore1970}, {kTraceA, kT0}}));
  EXPECT_EQ(Int("SELECT min_s FROM span_trace_index_tail"), -2);
  EXPECT_EQ(Int("SELECT span_s FROM span_trace_index_tail"), kT0 / kSecondNs + 2);
  EXPECT_EQ(TraceStarts(kTraceA), (std::vector<int64_t>{kBefore1970, kT0}));
  ASSERT_TRUE(store_->ExecuteSql("DROP TABLE span_trace_index; DROP TABLE span_trace_index_tail").ok());
  Close();
  Open();
  EXPECT_EQ(Int("SELECT min_s FROM span_trace_index"), -2);
  EXPECT_EQ(Int("SELECT span_s FROM span_trace_index"), kT0 / kSecondNs + 2);
  EXPECT_EQ(TraceStarts(kTraceA), (std::vector<int64_t>{kBefore1970, kT0}));
}

TEST(TraceIndexTest, SecondsBecomeNanosecondRangesWithinInt64) {
  using duckdb_index::RangeOfSeconds;
  using duckdb_index::SecondOf;
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(SecondOf(0), 0);
  EXPECT_EQ(SecondOf(kSecondNs - 1), 0);
  EXPECT_EQ(SecondOf(kSecondNs), 1);
  EXPECT_EQ(SecondOf(-1), -1);
  EXPECT_EQ(SecondOf(-kSecondNs), -1);
  EXPECT_EQ(SecondOf(-kSecondNs - 1), -2);
  EXPECT_EQ(SecondOf(kMin), -9'223'372'037);
  const std::optional<TimeRange> r = RangeOfSeconds(-2, 3);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->from_ns, -2 * kSecondNs);
  EXPECT_EQ(r->to_ns, 4 * kSecondNs);
  // The least time's second starts before int64 does: the range starts at its least value.
  ASSERT_TRUE(RangeOfSeconds(SecondOf(kMin), 0).has_value());
  EXPECT_EQ(RangeOfSeconds(SecondOf(kMin), 0)->from_ns, kMin);
  // The last second ends past int64: no exclusive end, so no range.
  EXPECT_FALSE(RangeOfSeconds(0, SecondOf(kMax)).has_value());
  ASSERT_TRUE(RangeOfSeconds(0, SecondOf(kMax) - 1).has_value());
  EXPECT_EQ(RangeOfSeconds(0, SecondOf(kMax) - 1)->to_ns, SecondOf(kMax) * kSecondNs);
}

// A database an earlier build wrote has the trace_ranges tables (both id
// halves, nanosecond bounds): the open converts their rows into trace_index,
// not the spans and log records themselves, and drops them.
TEST_F(DuckDbIndexesTest, AnEarlierTraceRangesIndexIsConvertedAtOpen) {
  Write(Spans({{kTraceA, kT0 - 90 * kMinuteNs}, {kTraceA, kT0}, {kTraceB, kT0}}));
  Write(Logs({{kT0 - 90 * kMinuteNs, "old", kTraceA}}));
  const std::string columns =
      "project_id BIGINT, trace_id_high BIGINT, trace_id_low BIGINT, signal TINYINT, min_ns BIGINT, max_ns BIGINT";
  // The earlier index as that build kept it, except that trace A's span row
  // covers only its newer span: a conversion keeps that, a backfill from the
  // spans would not.
  ASSERT_TRUE(store_
                  ->ExecuteSql("DROP TABLE span_trace_index; DROP TABLE span_trace_index_tail; DROP TABLE "
                               "log_trace_index; DROP TABLE log_trace_index_tail; CREATE TABLE trace_ranges_tail (" +
                               columns + "); CREATE TABLE trace_ranges (" + columns +
                               ", run BIGINT); INSERT INTO trace_ranges VALUES (1, 10, 1, 0, " + std::to_string(kT0) +
                               ", " + std::to_string(kT0) + ", 1), (1, 11, 2, 0, " + std::to_string(kT0) + ", " +
                               std::to_string(kT0) + ", 1); INSERT INTO trace_ranges_tail VALUES (1, 10, 1, 1, " +
                               std::to_string(kT0 - 90 * kMinuteNs) + ", " + std::to_string(kT0 - 90 * kMinuteNs) + ")")
                  .ok());
  Close();
  Open();
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index"), 2);
  EXPECT_EQ(Int("SELECT count(*) FROM log_trace_index"), 1);
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index_tail") + Int("SELECT count(*) FROM log_trace_index_tail"), 0);
  EXPECT_EQ(Int("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'trace_ranges%'"), 0);
  EXPECT_EQ(Int("SELECT min_s FROM log_trace_index"), (kT0 - 90 * kMinuteNs) / kSecondNs);
  EXPECT_EQ(TraceStarts(kTraceA), (std::vector<int64_t>{kT0}));
  EXPECT_EQ(TraceStarts(kTraceB), (std::vector<int64_t>{kT0}));
  Close();
  Open();
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index") + Int("SELECT count(*) FROM log_trace_index"), 3);
}

// Not an index, but the same fixture (a store opened without a
// memory_limit): it runs under kDefaultMemoryLimitPercent of the usable
// memory, not DuckDB's own 80% of RAM.
using DuckDbStoreSettingsTest = DuckDbIndexesTest;

TEST_F(DuckDbStoreSettingsTest, WithoutAMemoryLimitItTakesSixtyPercentOfUsableMemory) {
  const std::string ours = DefaultDuckDbMemoryLimit();
  ASSERT_EQ(ours, std::to_string(UsableMemoryBytes() / 100 * 60 >> 20) + "MiB");
  // DuckDB's rendering of our value and of its own default, from a database of its own.
  duckdb_database db = nullptr;
  duckdb_connection conn = nullptr;
  ASSERT_EQ(duckdb_open(nullptr, &db), DuckDBSuccess);
  ASSERT_EQ(duckdb_connect(db, &conn), DuckDBSuccess);
  auto setting = [&] {
    std::string value;
    EXPECT_TRUE(duckdb_index::Query(conn, "SELECT current_setting('memory_limit')", [&](const RowView& r) {
                  value = r.GetString(0);
                }).ok());
    return value;
  };
  const std::string duckdb_default = setting();
  ASSERT_TRUE(duckdb_index::Exec(conn, "SET memory_limit = '" + ours + "'").ok());
  const std::string expected = setting();
  duckdb_disconnect(&conn);
  duckdb_close(&db);
  Result<SqlResult> r = store_->ExecuteSql("SELECT current_setting('memory_limit')");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->rows.size(), 1u);
  EXPECT_EQ(r->rows[0][0].value_or(""), expected);
  EXPECT_NE(expected, duckdb_default);
}

// SortedRuns alone, on a table of one key column, with a merge cap of 10
// rows: runs of two rows merge four at a time (8 rows), four runs of 8 would
// make 32 and are left as they are, and every row stays readable in order.
TEST(SortedRunsTest, AMergePastTheCapIsNotMade) {
  duckdb_database db = nullptr;
  duckdb_connection conn = nullptr;
  ASSERT_EQ(duckdb_open(nullptr, &db), DuckDBSuccess);
  ASSERT_EQ(duckdb_connect(db, &conn), DuckDBSuccess);
  const duckdb_index::RunTableDef def{"runs", "tail", "k", "", "k"};
  ASSERT_TRUE(duckdb_index::Exec(conn, "CREATE TABLE tail (k BIGINT); CREATE TABLE runs (k BIGINT, run BIGINT)").ok());
  duckdb_index::SortedRuns runs(def, /*max_merge_rows=*/10);
  ASSERT_TRUE(runs.Load(conn).ok());
  auto run_sizes = [&] {
    std::vector<int64_t> sizes;
    EXPECT_TRUE(duckdb_index::Query(conn, "SELECT count(*) FROM runs GROUP BY run ORDER BY run", [&](const RowView& r) {
                  sizes.push_back(r.GetInt(0));
                }).ok());
    return sizes;
  };
  for (int i = 0; i < 20; ++i) {
    // Keys descending across compactions, so a run is sorted only if a merge sorts it.
    const int64_t k = 100 - 2 * i;
    ASSERT_TRUE(
        duckdb_index::Exec(conn, "INSERT INTO tail VALUES (" + std::to_string(k) + "), (" + std::to_string(k - 1) + ")")
            .ok());
    ASSERT_TRUE(runs.Compact(conn).ok());
    if (i == 3) {
      EXPECT_EQ(run_sizes(), (std::vector<int64_t>{8}));
    }
    if (i == 5) {
      EXPECT_EQ(run_sizes(), (std::vector<int64_t>{8, 2, 2}));
    }
  }
  EXPECT_EQ(run_sizes(), (std::vector<int64_t>(5, 8)));
  EXPECT_EQ(runs.runs(), 5u);
  // Each run is one sorted stretch of 8 keys; all 40 rows are there.
  int64_t rows = 0, sorted = 0;
  ASSERT_TRUE(
      duckdb_index::Query(conn,
                          "SELECT count(*), count(*) FILTER (WHERE k = 100 - 8 * (run_pos // 8) - 7 + run_pos % 8) "
                          "FROM (SELECT k, row_number() OVER (ORDER BY rowid) - 1 AS run_pos FROM runs)",
                          [&](const RowView& r) {
                            rows = r.GetInt(0);
                            sorted = r.GetInt(1);
                          })
          .ok());
  EXPECT_EQ(rows, 40);
  EXPECT_EQ(sorted, 40);
  // The run sizes are read back at open: the next compaction still merges nothing past the cap.
  duckdb_index::SortedRuns reopened(def, /*max_merge_rows=*/10);
  ASSERT_TRUE(reopened.Load(conn).ok());
  EXPECT_EQ(reopened.runs(), 5u);
  duckdb_disconnect(&conn);
  duckdb_close(&db);
}

TEST_F(DuckDbIndexesTest, AnExistingDatabaseIsBackfilledAtOpen) {
  Write(Spans({{kTraceA, kT0}, {kTraceA, kT0 - 90 * kMinuteNs}, {kTraceB, kT0}}));
  Write(Logs({{kT0 - 90 * kMinuteNs, "Old Zebrafish here", kTraceA}, {kT0, "new record", kTraceB}}));
  // A database from before the indexes: their tables are not there.
  ASSERT_TRUE(store_
                  ->ExecuteSql("DROP TABLE span_trace_index; DROP TABLE span_trace_index_tail; DROP TABLE "
                               "log_trace_index; DROP TABLE log_trace_index_tail; DROP TABLE log_tokens; "
                               "DROP TABLE log_tokens_tail; DROP TABLE log_token_dict")
                  .ok());
  Close();
  Open();
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index"), 2);  // two traces' spans
  EXPECT_EQ(Int("SELECT count(*) FROM log_trace_index"), 2);   // and their log records
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index_tail") + Int("SELECT count(*) FROM log_trace_index_tail"), 0);
  EXPECT_EQ(Int("SELECT count(*) FROM log_tokens WHERE token = 'zebrafish'"), 1);
  EXPECT_EQ(Int("SELECT count(*) FROM log_token_dict WHERE token = 'zebrafish'"), 1);
  EXPECT_EQ(TraceStarts(kTraceA), (std::vector<int64_t>{kT0 - 90 * kMinuteNs, kT0}));
  EXPECT_EQ(Search("zebra"), (std::vector<std::string>{"Old Zebrafish here"}));
  EXPECT_TRUE(Search("absent").empty());
  // Reopening again leaves them as they are.
  Close();
  Open();
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index") + Int("SELECT count(*) FROM log_trace_index"), 4);
}

// More rows than a DuckDB row group (122,880), which DuckDB writes to the
// file before the commit, and no spans: the backfill's rows must be there at
// once, not only after a checkpoint.
TEST_F(DuckDbIndexesTest, ALargeBackfillIsReadAtOnce) {
  constexpr int kRows = 150'000;
  std::vector<LogRow> rows;
  for (int i = 0; i < kRows; ++i) rows.push_back({kT0 + i, "r", TraceId{7, static_cast<uint64_t>(i + 1)}});
  Write(Logs(rows));
  ASSERT_TRUE(store_->ExecuteSql("DROP TABLE log_trace_index; DROP TABLE log_trace_index_tail").ok());
  Close();
  Open();
  EXPECT_EQ(Int("SELECT count(*) FROM log_trace_index"), kRows);
  Result<std::unique_ptr<TelemetryReader>> reader = store_->AcquireReader(1000);
  ASSERT_TRUE(reader.ok());
  LogPageQuery q;
  q.filter.project_id = kProject;
  q.filter.range = {kT0, kT0 + kRows};
  q.filter.trace_id = TraceId{7, 1234};
  Result<LogPage> page = (*reader)->Logs(q);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->records.size(), 1u);
  EXPECT_EQ(page->records[0].time_ns, kT0 + 1233);
}

// Compaction runs beside the sinks (no write lock): a trace committed while
// a tail moves must be in the runs or still in the tail afterwards.
TEST_F(DuckDbIndexesTest, CompactionBesideWritesLosesNoTrace) {
  constexpr int kBatches = 60;
  std::atomic<bool> done{false};
  std::thread writer([&] {
    Result<std::unique_ptr<SignalSink>> sink = store_->NewSink(Signal::kSpans);
    ASSERT_TRUE(sink.ok());
    for (int i = 0; i < kBatches; ++i) {
      std::vector<std::pair<TraceId, int64_t>> spans;
      for (int j = 0; j < 2000; ++j)
        spans.push_back({TraceId{static_cast<uint64_t>(i + 1), static_cast<uint64_t>(j + 1)}, kT0 + j});
      const SpanBatch b = Spans(spans);
      ASSERT_TRUE((*sink)->WriteSpans({&b}).ok());
    }
    done = true;
  });
  int compactions = 0;
  while (!done) {
    ASSERT_TRUE(store_->ReclaimSpace().ok());
    ++compactions;
  }
  writer.join();
  EXPECT_GT(compactions, 1);
  EXPECT_EQ(Int("SELECT count(*) FROM span_trace_index") + Int("SELECT count(*) FROM span_trace_index_tail"),
            kBatches * 2000);
  for (int i = 0; i < kBatches; i += 7) {
    EXPECT_EQ(TraceStarts(TraceId{static_cast<uint64_t>(i + 1), 1999}), (std::vector<int64_t>{kT0 + 1998})) << i;
  }
}

TEST_F(DuckDbIndexesTest, RetentionExpiresIndexRowsWithTheirRows) {
  Write(Spans({{kTraceA, kT0 - 120 * kMinuteNs}, {kTraceB, kT0 - 120 * kMinuteNs}, {kTraceB, kT0}}));
  Write(Logs({{kT0 - 120 * kMinuteNs, "old zebrafish", kTraceA}, {kT0, "new record", kTraceB}}));
  ASSERT_TRUE(store_->ReclaimSpace().ok());
  Write(Spans({{kTraceA, kT0 - 119 * kMinuteNs}}));  // in the tail
  for (Signal s : {Signal::kSpans, Signal::kLogs}) {
    ASSERT_TRUE(store_->DeleteBefore(s, ProjectSet::All(), kT0 - 60 * kMinuteNs).ok());
  }
  for (const char* table : {"span_trace_index", "span_trace_index_tail", "log_trace_index", "log_trace_index_tail"}) {
    EXPECT_EQ(Int(std::string("SELECT count(*) FROM ") + table + " WHERE trace_id_low = 1"), 0) << table;
  }
  // Trace B's span row covers a live span: it stays, as wide as it was.
  EXPECT_EQ(Int("SELECT min_s FROM span_trace_index WHERE trace_id_low = 2"), (kT0 - 120 * kMinuteNs) / kSecondNs);
  EXPECT_TRUE(TraceStarts(kTraceA).empty());
  EXPECT_EQ(TraceStarts(kTraceB), (std::vector<int64_t>{kT0}));
  EXPECT_EQ(Int("SELECT count(*) FROM log_tokens WHERE token = 'zebrafish'"), 0);
  EXPECT_EQ(Int("SELECT count(*) FROM log_tokens WHERE token = 'new'"), 1);
}

// A retention delete of more rows than --duckdb-max-delete-rows goes in
// slices of whole rows by time, with a checkpoint between two (DuckDB holds
// 16 bytes per deleted row until then): the same rows go, their rollups and
// index rows with them, and the checkpoint folded the WAL.
TEST(DuckDbRetentionTest, ALargeDeleteGoesInSlicesWithCheckpointsBetween) {
  constexpr int kRecords = 1000, kExpired = 900;
  std::vector<LogRow> rows;
  for (int i = 0; i < kRecords; ++i) {
    rows.push_back({kT0 - (kRecords - i) * kSecondNs, "record" + std::to_string(i) + " word",
                    TraceId{static_cast<uint64_t>(i + 1), 5}});
  }
  const int64_t cutoff = rows[kExpired].time;
  for (int64_t max_delete_rows : {int64_t{100}, int64_t{kRecords}}) {
    SCOPED_TRACE("max_delete_rows " + std::to_string(max_delete_rows));
    testing::TempDir dir;
    StoreOptions options;
    options.data_dir = dir.str();
    options.max_delete_rows = max_delete_rows;
    Result<std::unique_ptr<TelemetryStore>> store = OpenDuckDbStore(options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    const LogBatch batch = Logs(rows);
    {
      Result<std::unique_ptr<SignalSink>> sink = (*store)->NewSink(Signal::kLogs);
      ASSERT_TRUE(sink.ok());
      ASSERT_TRUE((*sink)->WriteLogs({&batch}).ok());
    }
    const std::string wal = dir.str() + "/telemetry.duckdb.wal";
    const uintmax_t wal_before = std::filesystem::file_size(wal);

    Result<uint64_t> deleted = (*store)->DeleteBefore(Signal::kLogs, ProjectSet::All(), cutoff);
    ASSERT_TRUE(deleted.ok()) << deleted.status().ToString();
    EXPECT_EQ(*deleted, uint64_t{kExpired});
    auto count = [&](const std::string& sql) {
      Result<SqlResult> r = (*store)->ExecuteSql(sql);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      return r.ok() && r->rows.size() == 1 && r->rows[0][0] ? std::stoll(*r->rows[0][0]) : -1;
    };
    EXPECT_EQ(count("SELECT count(*) FROM logs"), kRecords - kExpired);
    EXPECT_EQ(count("SELECT min(time_ns) FROM logs"), cutoff);
    EXPECT_EQ(count("SELECT count(*) FROM log_trace_index_tail"), kRecords - kExpired);
    EXPECT_EQ(count("SELECT count(*) FROM log_tokens_tail WHERE token = 'record0'"), 0);
    // The volume chart (rollups or rows) counts what is left, minute by minute.
    Result<std::unique_ptr<TelemetryReader>> reader = (*store)->AcquireReader(1000);
    ASSERT_TRUE(reader.ok());
    LogVolumeQuery q;
    q.filter.project_id = kProject;
    q.filter.range = {kT0 - 2 * kRecords * kSecondNs, kT0};
    q.buckets = {q.filter.range.from_ns, 60 * kSecondNs, 2 * kRecords / 60 + 1};
    Result<LogVolume> volume = (*reader)->CountLogs(q);
    ASSERT_TRUE(volume.ok()) << volume.status().ToString();
    std::map<int64_t, int64_t> want, got;
    for (int i = kExpired; i < kRecords; ++i) want[(rows[i].time - q.buckets.origin_ns) / q.buckets.step_ns]++;
    for (const LogVolumeRow& r : *volume) got[r.bucket] += r.count;
    EXPECT_EQ(got, want);
    reader->reset();
    // Sliced, a checkpoint folded the WAL (the inserts and the first
    // slices); in one transaction, the delete only added to it.
    if (max_delete_rows < kExpired) {
      EXPECT_LT(std::filesystem::file_size(wal), wal_before);
    } else {
      EXPECT_GE(std::filesystem::file_size(wal), wal_before);
    }
    EXPECT_TRUE((*store)->Close().ok());
  }
}

TEST(DuckDbRetentionTest, NoSliceOfFewerThanOneRow) {
  testing::TempDir dir;
  StoreOptions options;
  options.data_dir = dir.str();
  options.max_delete_rows = 0;
  Result<std::unique_ptr<TelemetryStore>> store = OpenDuckDbStore(options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(store.status().message().find("max_delete_rows"), std::string::npos) << store.status().ToString();
}

TEST_F(DuckDbIndexesTest, LookupsReadOnlyWhatTheIndexesSay) {
  Write(Spans({{kTraceA, kT0 - 60 * kMinuteNs}, {kTraceA, kT0}}));
  Write(Logs({{kT0 - 60 * kMinuteNs, "zebrafish one", {}}, {kT0, "zebrafish two", {}}}));
  ASSERT_EQ(Search("zebrafish").size(), 2u);
  // Narrowed by hand, the index hides what it no longer covers: the reads
  // go through it rather than around it.
  ASSERT_TRUE(store_->ExecuteSql("UPDATE span_trace_index_tail SET min_s = min_s + span_s, span_s = 0").ok());
  EXPECT_EQ(TraceStarts(kTraceA), (std::vector<int64_t>{kT0}));
  ASSERT_TRUE(store_
                  ->ExecuteSql("DELETE FROM log_tokens_tail WHERE token = 'zebrafish' AND minute = " +
                               std::to_string(duckdb_index::MinuteOf(kT0)))
                  .ok());
  EXPECT_EQ(Search("zebrafish"), (std::vector<std::string>{"zebrafish one"}));
  ASSERT_TRUE(store_->ExecuteSql("DELETE FROM log_tokens_tail WHERE token = 'zebrafish'").ok());
  EXPECT_TRUE(Search("zebrafish").empty());
}

TEST_F(DuckDbIndexesTest, ABatchPreparedOnTheDecoderIsIndexedAsAnUnpreparedOne) {
  Result<std::unique_ptr<SignalSink>> sink = store_->NewSink(Signal::kLogs);
  ASSERT_TRUE(sink.ok());
  AnyBatch prepared = Logs({{kT0, "Payment DECLINED by issuer", {}}});
  (*sink)->Prepare(&prepared);
  const LogBatch& b = std::get<LogBatch>(prepared);
  ASSERT_NE(b.prepared, nullptr);
  // The writer takes the set made on the decoder, not one of its own.
  EXPECT_EQ(duckdb_index::TokensOf(b), b.prepared);
  const LogBatch unprepared = Logs({{kT0 + 5 * kMinuteNs, "payment accepted", {}}});
  ASSERT_TRUE((*sink)->WriteLogs({&b, &unprepared}).ok());
  sink->reset();
  EXPECT_EQ(Search("declined"), (std::vector<std::string>{"Payment DECLINED by issuer"}));
  EXPECT_EQ(Search("accepted"), (std::vector<std::string>{"payment accepted"}));
  EXPECT_EQ(Search("payment").size(), 2u);
  EXPECT_EQ(Int("SELECT count(*) FROM log_tokens_tail WHERE token = 'payment'"), 2);  // one per minute
}

// More token rows than a DuckDB chunk holds (2,048): each is stored once,
// with its project and minute, in every chunk the writer appends.
TEST_F(DuckDbIndexesTest, EveryTokenRowOfALargeBatchIsStored) {
  std::vector<LogRow> rows;
  int64_t bytes = 0;
  for (int i = 0; i < 5000; ++i) {
    const std::string word = "w" + std::to_string(i);
    rows.push_back({kT0 + (i % 2) * kMinuteNs, word + " shared", {}});
    bytes += static_cast<int64_t>(word.size());
  }
  const LogBatch b = Logs(rows);
  Write(b);
  EXPECT_EQ(Int("SELECT count(*) FROM log_tokens_tail"), 5002);  // 'shared' in both minutes
  EXPECT_EQ(Int("SELECT count(DISTINCT (token, minute)) FROM log_tokens_tail"), 5002);
  EXPECT_EQ(Int("SELECT count(*) FROM log_tokens_tail WHERE project_id = " + std::to_string(kProject)), 5002);
  EXPECT_EQ(Int("SELECT sum(length(token)) FROM log_tokens_tail WHERE token <> 'shared'"), bytes);
  // Each word in the minute of its record.
  EXPECT_EQ(Int("SELECT count(*) FROM log_tokens_tail WHERE token <> 'shared' AND minute <> " +
                std::to_string(duckdb_index::MinuteOf(kT0)) + " + CAST(substr(token, 2) AS BIGINT) % 2"),
            0);
  EXPECT_EQ(Search("w4999"), (std::vector<std::string>{"w4999 shared"}));
  EXPECT_EQ(Search("w0 "), (std::vector<std::string>{"w0 shared"}));
}

TEST_F(DuckDbIndexesTest, SearchFoldsAsLowerDoes) {
  Write(Logs({{kT0, "Cooled to 5\u212A", {}},
              {kT0 + 1, "Flight to İstanbul", {}},
              {kT0 + 2, "ÉCOLE", {}},
              {kT0 + 3, "order 4711 shipped", {}}}));
  // What DuckDB's own lower() says, with the index out of the way.
  for (const char* text : {"5k", "istanbul", "école", "ÉCOLE", "cole", "4711", "r 47", "order 4711"}) {
    const int64_t want =
        Int(std::string("SELECT count(*) FROM logs WHERE contains(lower(body), lower('") + text + "'))");
    EXPECT_EQ(static_cast<int64_t>(Search(text).size()), want) << text;
    EXPECT_GT(want, 0) << text;
  }
  ASSERT_TRUE(store_->ReclaimSpace().ok());
  EXPECT_EQ(Search("5K"), (std::vector<std::string>{"Cooled to 5\u212A"}));
}

}  // namespace
}  // namespace sightline
