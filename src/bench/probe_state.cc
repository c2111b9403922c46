#include "bench/probe_state.h"

#include <fcntl.h>
#include <simdjson.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/json_writer.h"

namespace sightline::bench {

std::string ProbeStateJson(const ProbeState& s) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("version");
  w.Int(s.version);
  w.Key("engine");
  w.String(s.engine);
  w.Key("signals");
  w.BeginArray();
  for (const auto& x : s.signals) w.String(x);
  w.EndArray();
  w.Key("seed");
  w.Uint(s.seed);
  w.Key("levels");
  w.BeginArray();
  for (uint64_t l : s.levels) w.Uint(l);
  w.EndArray();
  w.Key("server_args");
  w.String(s.server_args);
  w.Key("batch");
  w.Uint(s.batch);
  w.Key("base_time_ns");
  w.Int(s.base_time_ns);
  w.Key("time_step_ns");
  w.Int(s.time_step_ns);
  w.Key("point_step_ns");
  w.Int(s.point_step_ns);
  w.Key("from_ms");
  w.Int(s.from_ms);
  w.Key("to_ms");
  w.Int(s.to_ms);
  w.Key("sent");
  w.Uint(s.sent);
  w.Key("in_flight_until");
  w.Uint(s.in_flight_until);
  w.Key("accepted");
  w.BeginArray();
  for (uint64_t a : s.accepted) w.Uint(a);
  w.EndArray();
  w.Key("truth_complete");
  w.Bool(s.truth_complete);
  w.Key("probed_rows");
  w.Uint(s.probed_rows);
  w.Key("background_payload");
  w.Uint(s.background_payload);
  w.Key("background_accepted");
  w.Uint(s.background_accepted);
  w.EndObject();
  out.push_back('\n');
  return out;
}

Result<ProbeState> ParseProbeState(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return Status::InvalidArgument("probe state: not JSON");
  ProbeState s;
  bool ok = true;
  auto u64 = [&](const char* key, uint64_t* v) { ok = ok && doc[key].get_uint64().get(*v) == simdjson::SUCCESS; };
  auto i64 = [&](const char* key, int64_t* v) { ok = ok && doc[key].get_int64().get(*v) == simdjson::SUCCESS; };
  int64_t version = 0;
  i64("version", &version);
  if (!ok || version != 1) return Status::InvalidArgument("probe state: unknown version");
  s.version = static_cast<int>(version);
  std::string_view text;
  ok = ok && doc["engine"].get_string().get(text) == simdjson::SUCCESS;
  s.engine = std::string(text);
  ok = ok && doc["server_args"].get_string().get(text) == simdjson::SUCCESS;
  s.server_args = std::string(text);
  simdjson::dom::array a;
  if (ok && doc["signals"].get_array().get(a) == simdjson::SUCCESS) {
    for (auto e : a) {
      ok = ok && e.get_string().get(text) == simdjson::SUCCESS;
      s.signals.emplace_back(text);
    }
  } else {
    ok = false;
  }
  if (ok && doc["levels"].get_array().get(a) == simdjson::SUCCESS) {
    for (auto e : a) {
      uint64_t v = 0;
      ok = ok && e.get_uint64().get(v) == simdjson::SUCCESS;
      s.levels.push_back(v);
    }
  } else {
    ok = false;
  }
  if (ok && doc["accepted"].get_array().get(a) == simdjson::SUCCESS && a.size() == s.accepted.size()) {
    size_t i = 0;
    for (auto e : a) ok = ok && e.get_uint64().get(s.accepted[i++]) == simdjson::SUCCESS;
  } else {
    ok = false;
  }
  uint64_t batch = 0;
  u64("seed", &s.seed);
  u64("batch", &batch);
  s.batch = batch;
  i64("base_time_ns", &s.base_time_ns);
  i64("time_step_ns", &s.time_step_ns);
  i64("point_step_ns", &s.point_step_ns);
  i64("from_ms", &s.from_ms);
  i64("to_ms", &s.to_ms);
  u64("sent", &s.sent);
  u64("in_flight_until", &s.in_flight_until);
  u64("probed_rows", &s.probed_rows);
  u64("background_payload", &s.background_payload);
  u64("background_accepted", &s.background_accepted);
  ok = ok && doc["truth_complete"].get_bool().get(s.truth_complete) == simdjson::SUCCESS;
  if (!ok) return Status::InvalidArgument("probe state: a field is missing or has the wrong type");
  return s;
}

Status SaveProbeState(const std::string& dir, const ProbeState& s) {
  const std::string path = dir + "/" + kProbeStateFile;
  const std::string tmp = path + ".tmp";
  const std::string text = ProbeStateJson(s);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IoError("cannot create " + tmp + ": " + std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IoError("cannot write " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Result<ProbeState> LoadProbeState(const std::string& dir) {
  const std::string path = dir + "/" + kProbeStateFile;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    return Status::NotFound(
        path + " not found: --resume takes a directory a probe with --keep-data printed (\"data kept in ...\")");
  }
  std::stringstream ss;
  ss << f.rdbuf();
  auto s = ParseProbeState(ss.str());
  if (!s.ok()) return Status::InvalidArgument(path + ": " + s.status().message());
  return s;
}

namespace {

std::string Joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ",") + x;
  return out;
}

std::string Joined(const std::vector<uint64_t>& v) {
  std::string out;
  for (uint64_t x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

}  // namespace

std::string ProbeStateMismatch(const ProbeState& saved, const ProbeState& wanted) {
  auto differs = [](const char* what, const std::string& a, const std::string& b) {
    return std::string(what) + ": the kept ladder has '" + a + "', this run asks for '" + b + "'";
  };
  if (saved.engine != wanted.engine) return differs("--spawn", saved.engine, wanted.engine);
  if (saved.signals != wanted.signals) return differs("--signal", Joined(saved.signals), Joined(wanted.signals));
  if (saved.seed != wanted.seed) return differs("--seed", std::to_string(saved.seed), std::to_string(wanted.seed));
  if (saved.levels != wanted.levels) return differs("--levels", Joined(saved.levels), Joined(wanted.levels));
  if (saved.batch != wanted.batch) return differs("--batch", std::to_string(saved.batch), std::to_string(wanted.batch));
  if (saved.server_args != wanted.server_args) return differs("--server-arg", saved.server_args, wanted.server_args);
  return "";
}

}  // namespace sightline::bench
