#include "bench/bench_common.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "common/json_writer.h"

namespace sightline::bench {

Machine DescribeMachine() {
  Machine m;
  m.cores = std::thread::hardware_concurrency();
  std::ifstream cpu("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpu, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) m.cpu_model = line.substr(colon + 2);
      break;
    }
  }
  std::ifstream mem("/proc/meminfo");
  while (std::getline(mem, line)) {
    if (line.rfind("MemTotal:", 0) == 0) {
      std::istringstream in(line.substr(9));
      uint64_t kb = 0;
      in >> kb;
      m.mem_bytes = kb * 1024;
      break;
    }
  }
  utsname u{};
  if (uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release;
  return m;
}

void WriteMachineJson(JsonWriter* w, const Machine& m) {
  w->Key("machine");
  w->BeginObject();
  w->Key("cores");
  w->Uint(m.cores);
  w->Key("cpu_model");
  w->String(m.cpu_model);
  w->Key("mem_bytes");
  w->Uint(m.mem_bytes);
  w->Key("kernel");
  w->String(m.kernel);
  w->EndObject();
}

std::string UtcNowIso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double LoadAverage1m() {
  std::ifstream f("/proc/loadavg");
  double v = -1;
  f >> v;
  return v;
}

std::string RandomToken() {
  std::random_device rd;
  std::string t = "bench_";
  static const char* kHex = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) t.push_back(kHex[rd() & 15]);
  return t;
}

std::optional<std::string> MakeTempDir(const std::string& parent) {
  // A --work-dir that does not exist yet is made, as `mkdir -p` would.
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  std::string tmpl = parent + "/sightline-bench-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return std::nullopt;
  return tmpl;
}

std::string DefaultWorkParent() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

double NearestRankSorted(const std::vector<float>& sorted, double p) {
  if (sorted.empty()) return 0;
  // p * n / 100 rather than p / 100 * n: exact for whole p and 99.9 at round n.
  double rank = std::ceil(p * static_cast<double>(sorted.size()) / 100.0);
  size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(i, sorted.size() - 1)];
}

double Percentile(std::vector<float>* values, double p) {
  std::sort(values->begin(), values->end());
  return NearestRankSorted(*values, p);
}

LatencySummary SummarizeLatency(std::vector<float>* values_ms) {
  LatencySummary s;
  if (values_ms->empty()) return s;
  std::sort(values_ms->begin(), values_ms->end());
  s.p50 = NearestRankSorted(*values_ms, 50);
  s.p95 = NearestRankSorted(*values_ms, 95);
  s.p99 = NearestRankSorted(*values_ms, 99);
  s.max = values_ms->back();
  return s;
}

void WriteLatencyJson(JsonWriter* w, const LatencySummary& s) {
  w->Key("latency_ms");
  w->BeginObject();
  w->Key("p50");
  w->Double(s.p50);
  w->Key("p95");
  w->Double(s.p95);
  w->Key("p99");
  w->Double(s.p99);
  w->Key("max");
  w->Double(s.max);
  w->EndObject();
}

Spread SpreadOf(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  size_t n = v.size();
  s.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return s;
}

std::string Human(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof(buf), "%.2fM", v / 1e6);
  else if (v >= 1e4) std::snprintf(buf, sizeof(buf), "%.1fk", v / 1e3);
  else std::snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

std::string EngineLabel(const std::string& spawn, const std::vector<std::string>& server_args) {
  if (spawn.empty()) return "external";
  for (const std::string& a : server_args) {
    if (a == "--clickhouse-cluster" || a.rfind("--clickhouse-cluster=", 0) == 0) return spawn + "-cluster";
  }
  return spawn;
}

}  // namespace sightline::bench
