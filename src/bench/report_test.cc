#include "bench/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sightline::bench {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Recorded fixtures: the ingest ones are real `bench ingest` results; ramp,
// probe and oltp are hand-written to the schemas in bench/README.md.
// SIGHTLINE_SOURCE_DIR, not __FILE__: ccache's base_dir makes __FILE__
// relative, and the fixtures must be found from any working directory.
std::string FixtureDir() { return std::string(SIGHTLINE_SOURCE_DIR) + "/test/fixtures/bench/"; }

ReportInput Fixture(const std::string& name) {
  std::ifstream f(FixtureDir() + name, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  EXPECT_TRUE(f.good()) << "missing fixture " << name;
  return {"test/fixtures/bench/" + name, s.str()};
}

ReportFiles Build(const std::vector<std::string>& names) {
  std::vector<ReportInput> in;
  for (const std::string& n : names) in.push_back(Fixture(n));
  auto r = BuildReport(in);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : ReportFiles{};
}

ReportFiles BuildAll() {
  return Build({"ingest-duckdb-spans-16384.json", "ingest-duckdb-spans-100.json", "ingest-sqlite-spans-16384.json",
                "ramp.json", "probe-sqlite.json", "probe-duckdb-no-summary.json", "oltp.json"});
}

const std::string* Chart(const ReportFiles& r, const std::string& name) {
  for (const auto& [n, svg] : r.charts) {
    if (n == name) return &svg;
  }
  return nullptr;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

//! Checks what an XML parser would: tags balance and nest, the root is one
//! <svg> with a viewBox, nothing trails it. Returns "" or what is wrong.
std::string XmlProblem(const std::string& svg) {
  std::vector<std::string> open;
  bool root_seen = false;
  size_t i = 0;
  while (i < svg.size()) {
    size_t lt = svg.find('<', i);
    if (lt == std::string::npos) break;
    size_t gt = svg.find('>', lt);
    if (gt == std::string::npos) return "unterminated tag";
    std::string tag = svg.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "</" + name + "> closes nothing open";
      open.pop_back();
      continue;
    }
    std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    if (open.empty()) {
      if (root_seen) return "content after the root element";
      if (name != "svg" || tag.find("viewBox=\"") == std::string::npos) return "root is not <svg viewBox=...>";
      root_seen = true;
    }
    if (Count(tag, "\"") % 2 != 0) return "unbalanced quotes in <" + name + ">";
    if (tag.back() != '/') open.push_back(name);
  }
  if (!root_seen) return "no root element";
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return "";
}

TEST(BenchReport, IngestRatesBesideThePublishedBaseline) {
  std::string md = BuildAll().markdown;
  // DuckDB spans: best 73,714 (ingest 16384 median) vs 95,737 -> 0.77; fleet 34,117 (batch 100) vs 36,577 -> 0.93.
  EXPECT_THAT(md, HasSubstr("| spans | duckdb | 73,714 | 95,737 | 0.77× | 34,117 | 36,577 | 0.93× |"));
  // SQLite spans: 67,695 vs 30,508 -> 2.22; no fleet run, and none published.
  EXPECT_THAT(md, HasSubstr("| spans | sqlite | 67,695 | 30,508 | 2.22× | - | - | - |"));
  // Logs on DuckDB come from the ramp's max and fleet max: 150,000 / 75,225 and 40,000 / 30,442.
  EXPECT_THAT(md, HasSubstr("| logs | duckdb | 150,000 | 75,225 | 1.99× | 40,000 | 30,442 | 1.31× |"));
  EXPECT_THAT(md, HasSubstr("| metrics | sqlite | 90,000 | 61,712 | 1.46× | - | - | - |"));
}

TEST(BenchReport, FleetConsumptionSharesAndHoursToCliff) {
  std::string md = BuildAll().markdown;
  // 500 spans/s of 34,117 fleet-shape and 73,714 best; cliff below the first level (1M) = 1M / 1.8M per hour.
  EXPECT_THAT(md, HasSubstr("| spans | 500/s | duckdb | 1.47% | 0.68% | < 33 min (failed at 1M rows) | 5.6 h |"));
  // SQLite spans: cliff at 1M -> 33 min; the published 100k -> 3 min.
  EXPECT_THAT(md, HasSubstr("| spans | 500/s | sqlite | - | 0.74% | 33 min | 3 min |"));
  // SQLite logs never failed up to 10M: 10M / 7.2M per hour, said as a lower bound.
  EXPECT_THAT(md, HasSubstr("| logs | 2,000/s | sqlite | - | - | > 1.4 h (no cliff up to 10M rows) | 1 min |"));
  EXPECT_THAT(md, HasSubstr("| logs | 2,000/s | duckdb | 5.00% | 1.33% | - | 1.4 h |"));
  EXPECT_THAT(md, HasSubstr("| metrics | 100/s | sqlite | - | 0.11% | - | 2.8 h |"));
}

TEST(BenchReport, ReadCliffsAndLatencyPerLevel) {
  std::string md = BuildAll().markdown;
  EXPECT_THAT(md, HasSubstr("| spans | sqlite | 1M (3.12 s) | 100k (2.27 s) |"));
  EXPECT_THAT(md, HasSubstr("| spans | duckdb | below 1M (first level failed) | 10M (902 ms) |"));
  EXPECT_THAT(md, HasSubstr("| logs | sqlite | none up to 10M (2.05 s) | 100k (114 ms) |"));
  // The spans level table (from the summary) and the logs one (from runs[]).
  EXPECT_THAT(md, HasSubstr("| 10M | - | 5.9 s | 1.3 s | 6 s | fail |"));
  EXPECT_THAT(md, HasSubstr("| 10M | - | 48 ms | 420 ms | 2.05 s | pass |"));
}

TEST(BenchReport, OltpTableBesideThePublishedOne) {
  std::string md = BuildAll().markdown;
  EXPECT_THAT(md, HasSubstr("| bulk_insert | - | 245,000 | 2.9 | 4.1 | 7.8 | 310.0 | 61,300 | 4.00× |"));
  EXPECT_THAT(md, HasSubstr("| pk_select | cached | 171,380 | 5.1 | 7.9 | 11.2 | 40.5 | 155,800 | 1.10× |"));
  EXPECT_THAT(md, HasSubstr("| mixed | uncached | 30,000 | 22.0 | 110.0 | 240.0 | 1100.0 | 3,915 | 7.66× |"));
  // Nothing was published for these.
  EXPECT_THAT(md, HasSubstr("| concurrent_readers | cached | 250,100 | 6.5 | 11.0 | 19.0 | 90.0 | - | - |"));
}

TEST(BenchReport, HeaderNamesEveryFileAndTheMachine) {
  std::string md = BuildAll().markdown;
  EXPECT_THAT(md, HasSubstr("| `test/fixtures/bench/ramp.json` | ramp | 2026-11-29T21:04:11Z | 2 cores, AMD EPYC"));
  EXPECT_THAT(md, HasSubstr("`test/fixtures/bench/ingest-duckdb-spans-100.json` | ingest |"));
}

TEST(BenchReport, ChartsAreWellFormedWithOneShapePerSeries) {
  ReportFiles r = BuildAll();
  ASSERT_FALSE(r.charts.empty());
  for (const auto& [name, svg] : r.charts) {
    EXPECT_EQ(XmlProblem(svg), "") << name;
    EXPECT_THAT(r.markdown, HasSubstr("](" + name + ")")) << name << " is not linked";
  }
  // Ramp: target and accepted items/s, one polyline each.
  const std::string* ramp = Chart(r, "ramp-duckdb-logs-rate.svg");
  ASSERT_NE(ramp, nullptr);
  EXPECT_EQ(Count(*ramp, "<polyline"), 2u);
  // Read latency: one line per call, plus the dashed 5 s limit.
  const std::string* read = Chart(r, "read-sqlite-spans.svg");
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(Count(*read, "<polyline"), 3u);
  EXPECT_THAT(*read, HasSubstr("5 s limit"));
  // Bytes per row per level: the probe's, or "-" where the engine did not say (null or absent).
  EXPECT_THAT(r.markdown, HasSubstr("| rows | B/row |"));
  EXPECT_THAT(r.markdown, HasSubstr("| 100k | 500.6 |"));
  EXPECT_THAT(r.markdown, HasSubstr("| 1M | - |"));
  // Cliffs: ours and published for spans/duckdb, spans/sqlite, logs/sqlite.
  const std::string* cliffs = Chart(r, "read-cliffs.svg");
  ASSERT_NE(cliffs, nullptr);
  EXPECT_EQ(Count(*cliffs, "<rect"), 6u);
  // Bounds are labelled as bounds: logs/sqlite never failed, spans/duckdb failed at its first level.
  EXPECT_THAT(*cliffs, HasSubstr(">&gt; 10M</text>"));
  EXPECT_THAT(*cliffs, HasSubstr(">&lt; 1M</text>"));
  const std::string* ingest = Chart(r, "ingest-vs-published.svg");
  ASSERT_NE(ingest, nullptr);
  EXPECT_EQ(Count(*ingest, "<rect"), 8u);
  EXPECT_THAT(*ingest, HasSubstr("currentColor"));
}

TEST(BenchReport, MissingInputsOmitTheirSections) {
  ReportFiles r = Build({"oltp.json"});
  EXPECT_THAT(r.markdown, HasSubstr("## SQLite OLTP"));
  EXPECT_THAT(r.markdown, Not(HasSubstr("Read cliffs")));
  EXPECT_THAT(r.markdown, Not(HasSubstr("Fleet consumption")));
  EXPECT_THAT(r.markdown, Not(HasSubstr("Ingest throughput")));
  EXPECT_TRUE(r.charts.empty());
}

TEST(BenchReport, MalformedInputIsAClearError) {
  auto r = BuildReport({Fixture("oltp.json"), Fixture("malformed.json")});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("test/fixtures/bench/malformed.json: not valid JSON"));

  auto no_kind = BuildReport({Fixture("no-benchmark.json")});
  ASSERT_FALSE(no_kind.ok());
  EXPECT_THAT(no_kind.status().message(), HasSubstr("no \"benchmark\" field"));

  auto unknown = BuildReport({{"x.json", R"({"benchmark":"fuzz","version":1})"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown benchmark kind \"fuzz\""));

  auto future = BuildReport({{"y.json", R"({"benchmark":"oltp","version":2,"phases":[]})"}});
  ASSERT_FALSE(future.ok());
  EXPECT_THAT(future.status().message(), HasSubstr("version 2"));
}

TEST(BenchReport, CommandExitsNonZeroOnMalformedInputAndWritesNothing) {
  std::string out = ::testing::TempDir() + "/sightline-report-test";
  std::filesystem::remove_all(out);
  ReportOptions o{{FixtureDir() + "malformed.json"}, out};
  EXPECT_EQ(RunReport(o), 1);
  EXPECT_FALSE(std::filesystem::exists(out + "/REPORT.md"));

  o.inputs = {FixtureDir() + "oltp.json", FixtureDir() + "ramp.json"};
  EXPECT_EQ(RunReport(o), 0);
  EXPECT_TRUE(std::filesystem::exists(out + "/REPORT.md"));
  EXPECT_TRUE(std::filesystem::exists(out + "/ramp-duckdb-logs-batch.svg"));
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace sightline::bench
