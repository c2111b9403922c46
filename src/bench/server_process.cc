#include "bench/server_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench/bench_common.h"

extern char** environ;

namespace sightline::bench {

namespace {

using Clock = std::chrono::steady_clock;

//! A loopback TCP port that was free a moment ago (the kernel's choice).
Result<int> FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return Status::IoError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  if (port <= 0) return Status::IoError("cannot find a free loopback port");
  return port;
}

//! Starts `path` with `argv` and `envp`, its output appended to `log_path`
//! and its stdin /dev/null, in a process group of its own; it gets SIGTERM
//! (a graceful stop) if the benchmark dies first. The child's pid.
Result<pid_t> ForkExec(const char* path, char* const argv[], char* const envp[], const std::string& log_path) {
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::IoError("cannot create " + log_path + ": " + std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return Status::IoError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    // A group of its own: a terminal's Ctrl-C reaches the benchmark, which
    // decides when the child stops (a resumable probe saves its state first).
    ::setpgid(0, 0);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
    ::execve(path, argv, envp);
    _exit(127);
  }
  ::close(log_fd);
  return pid;
}

enum class Readiness { kReady, kExited, kTimedOut };

//! Polls GET `path` of a child just started until it answers 200, the child
//! exits (reaped), or `timeout_s` passes.
Readiness WaitUntilAnswering(pid_t pid, const HttpEndpoint& at, const char* path, double timeout_s) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  while (Clock::now() < deadline) {
    int wstatus = 0;
    if (::waitpid(pid, &wstatus, WNOHANG) == pid) return Readiness::kExited;
    std::string body;
    auto code = HttpGet(at, path, &body, 1000);
    if (code.ok() && *code == 200) return Readiness::kReady;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Readiness::kTimedOut;
}

std::string Tail(const std::string& path, size_t bytes) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

}  // namespace

Result<std::unique_ptr<ServerProcess>> ServerProcess::Start(const SpawnOptions& options) {
  std::string data_dir = options.work_dir + "/data";
  std::string log_path = options.work_dir + "/server.log";
  std::unique_ptr<BenchClickHouse> clickhouse;
  std::vector<std::string> engine_args;
  if (options.engine == "clickhouse") {
    std::string cluster;  // --clickhouse-cluster=NAME or --clickhouse-cluster NAME among the extra arguments
    for (size_t i = 0; i < options.extra_args.size(); ++i) {
      const std::string& a = options.extra_args[i];
      if (a.rfind("--clickhouse-cluster=", 0) == 0) cluster = a.substr(21);
      else if (a == "--clickhouse-cluster" && i + 1 < options.extra_args.size()) cluster = options.extra_args[i + 1];
    }
    SL_ASSIGN_OR_RETURN(clickhouse,
                        BenchClickHouse::Open(options.clickhouse_url, options.work_dir, options.keep_data, cluster));
    engine_args = clickhouse->ServeArgs();
  }
  Status last = Status::Internal("not started");
  // A port found free can be taken before the child binds it: try again with new ones.
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto otlp_port = FreeLoopbackPort();
    auto api_port = FreeLoopbackPort();
    if (!otlp_port.ok()) return otlp_port.status();
    if (!api_port.ok()) return api_port.status();
    if (*otlp_port == *api_port) continue;
    int grpc_port = 0;
    if (options.grpc) {
      auto port = FreeLoopbackPort();
      if (!port.ok()) return port.status();
      if (*port == *otlp_port || *port == *api_port) continue;
      grpc_port = *port;
    }

    std::vector<std::string> args = {"sightline",   "--log-level",
                                     "warn",        "serve",
                                     "--data",      data_dir,
                                     "--storage",   options.engine,
                                     "--otlp-http", "127.0.0.1:" + std::to_string(*otlp_port),
                                     "--listen",    "127.0.0.1:" + std::to_string(*api_port),
                                     "--otlp-grpc", grpc_port ? "127.0.0.1:" + std::to_string(grpc_port) : ""};
    args.insert(args.end(), engine_args.begin(), engine_args.end());
    args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // The child's environment: ours without SIGHTLINE_* settings (they must
    // not leak into the server under test), plus the token. Built here:
    // after fork only async-signal-safe calls are allowed.
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "SIGHTLINE_", 10) != 0) env.emplace_back(*e);
    }
    env.push_back("SIGHTLINE_INGEST_TOKEN=" + options.token);
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    SL_ASSIGN_OR_RETURN(pid_t pid, ForkExec("/proc/self/exe", argv.data(), envp.data(), log_path));

    std::unique_ptr<ServerProcess> server(new ServerProcess());
    server->pid_ = pid;
    server->otlp_ = HttpEndpoint{"127.0.0.1", *otlp_port};
    server->api_ = HttpEndpoint{"127.0.0.1", *api_port};
    server->grpc_ = HttpEndpoint{"127.0.0.1", grpc_port};
    server->data_dir_ = data_dir;
    server->log_path_ = log_path;
    const Readiness ready = WaitUntilAnswering(pid, server->api_, "/readyz", options.ready_timeout_s);
    if (ready == Readiness::kReady) {
      server->clickhouse_ = std::move(clickhouse);
      return server;
    }
    if (ready == Readiness::kExited) server->pid_ = -1;
    if (ready == Readiness::kTimedOut) {
      double ignored = 0;
      (void)server->Stop(10, &ignored);
      return Status::Unavailable("spawned server not ready after " + std::to_string(options.ready_timeout_s) +
                                 " s; log " + log_path + ":\n" + Tail(log_path, 2000));
    }
    last = Status::Unavailable("spawned server exited during start; log " + log_path + ":\n" + Tail(log_path, 2000));
  }
  return last;
}

Result<std::string> ServerProcess::CreateToken(const std::string& scope) const {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe: ") + std::strerror(errno));
  std::vector<std::string> args = {"sightline", "token", "create", "--project", "default",
                                   "--scope",   scope,   "--data", data_dir_};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return Status::IoError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::execve("/proc/self/exe", argv.data(), environ);
    _exit(127);
  }
  ::close(out[1]);
  std::string printed;
  char buf[256];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    printed.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  while (!printed.empty() && (printed.back() == '\n' || printed.back() == ' ')) printed.pop_back();
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0 || printed.empty()) {
    return Status::Internal("`sightline token create --scope " + scope + "` failed; output: " + printed);
  }
  return printed;
}

ServerProcess::~ServerProcess() {
  double ignored = 0;
  (void)Stop(30, &ignored);
}

Status ServerProcess::Stop(double timeout_s, double* shutdown_seconds) {
  *shutdown_seconds = 0;
  if (pid_ <= 0) return Status::Ok();
  auto started = Clock::now();
  ::kill(pid_, SIGTERM);
  auto deadline = started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  int wstatus = 0;
  bool reaped = false;
  while (Clock::now() < deadline) {
    pid_t r = ::waitpid(pid_, &wstatus, WNOHANG);
    if (r == pid_ || r < 0) {
      reaped = r == pid_;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Status st;
  if (!reaped) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &wstatus, 0);
    st = Status::DeadlineExceeded("server did not stop within " + std::to_string(timeout_s) + " s of SIGTERM; killed");
  } else if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    st = Status::Internal("server exited with status " +
                          std::to_string(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1) + " (log " + log_path_ + ")");
  }
  *shutdown_seconds = std::chrono::duration<double>(Clock::now() - started).count();
  pid_ = -1;
  return st;
}

namespace {

std::string UrlEncode(const std::string& s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace

Result<std::string> ClickHouseQuery(const HttpEndpoint& server, const std::string& database, const std::string& sql,
                                    std::string data, bool gzip) {
  std::string target = "/?wait_end_of_query=1";
  if (!database.empty()) target += "&database=" + UrlEncode(database);
  std::string body = std::move(data);
  if (body.empty()) body = sql;
  else target += "&query=" + UrlEncode(sql);
  std::string response;
  SL_ASSIGN_OR_RETURN(int code, HttpPost(server, target, std::move(body), &response, 600000, gzip ? "gzip" : ""));
  if (code != 200) return Status::IoError("clickhouse: " + response.substr(0, 2000));
  return response;
}

Result<std::unique_ptr<BenchClickHouse>> BenchClickHouse::Open(const std::string& url, const std::string& work_dir,
                                                               bool keep_data, const std::string& cluster) {
  if (!url.empty()) {
    SL_ASSIGN_OR_RETURN(HttpEndpoint http, ParseLoopbackUrl(url));
    std::unique_ptr<BenchClickHouse> server(new BenchClickHouse());
    server->http_ = http;
    server->cluster_ = cluster;
    server->database_ = "sightline_bench_" + RandomToken().substr(6, 12);
    server->drop_ = !keep_data;
    SL_RETURN_IF_ERROR(ClickHouseQuery(http, "", "SELECT 1").status());
    return server;
  }
  std::string binary = "/usr/sbin/clickhouse-server";
  if (const char* env = std::getenv("SIGHTLINE_CLICKHOUSE_SERVER"); env != nullptr && *env != '\0') binary = env;
  if (::access(binary.c_str(), X_OK) != 0) {
    return Status::NotFound(binary + " not found (Debian's clickhouse-server, or set SIGHTLINE_CLICKHOUSE_SERVER)");
  }
  const std::string dir = work_dir + "/clickhouse";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IoError("cannot create " + dir + ": " + ec.message());
  Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    SL_ASSIGN_OR_RETURN(int http_port, FreeLoopbackPort());
    SL_ASSIGN_OR_RETURN(int tcp_port, FreeLoopbackPort());
    SL_ASSIGN_OR_RETURN(int interserver_port, FreeLoopbackPort());
    if (http_port == tcp_port || tcp_port == interserver_port || http_port == interserver_port) continue;
    {
      // The server's defaults otherwise: its caches and merge settings are
      // what a user's server has.
      std::ofstream config(dir + "/config.xml");
      config << "<?xml version=\"1.0\"?>\n<yandex>\n"
             << "  <logger><level>warning</level><log>" << dir << "/server.log</log><errorlog>" << dir
             << "/error.log</errorlog><console>0</console></logger>\n"
             << "  <http_port>" << http_port << "</http_port>\n  <tcp_port>" << tcp_port << "</tcp_port>\n"
             << "  <interserver_http_port>" << interserver_port << "</interserver_http_port>\n"
             << "  <listen_host>127.0.0.1</listen_host>\n"
             << "  <path>" << dir << "/data/</path>\n  <tmp_path>" << dir << "/tmp/</tmp_path>\n"
             << "  <user_files_path>" << dir << "/user_files/</user_files_path>\n"
             << "  <format_schema_path>" << dir << "/format_schemas/</format_schema_path>\n"
             << "  <users_config>" << dir << "/users.xml</users_config>\n"
             << "  <default_profile>default</default_profile>\n  <default_database>default</default_database>\n"
             << "  <mark_cache_size>5368709120</mark_cache_size>\n"
             << "</yandex>\n";
      std::ofstream users(dir + "/users.xml");
      users << "<?xml version=\"1.0\"?>\n<yandex>\n  <profiles><default></default></profiles>\n"
            << "  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>"
            << "<profile>default</profile><quota>default</quota></default></users>\n"
            << "  <quotas><default></default></quotas>\n</yandex>\n";
      if (!config || !users) return Status::IoError("cannot write the clickhouse-server config in " + dir);
    }
    std::string config_arg = "--config-file=" + dir + "/config.xml";
    char* argv[] = {binary.data(), config_arg.data(), nullptr};
    SL_ASSIGN_OR_RETURN(pid_t pid, ForkExec(binary.c_str(), argv, environ, dir + "/stdout.log"));
    std::unique_ptr<BenchClickHouse> server(new BenchClickHouse());
    server->pid_ = pid;
    server->http_ = HttpEndpoint{"127.0.0.1", http_port};
    const Readiness ready = WaitUntilAnswering(pid, server->http_, "/ping", 60);
    if (ready == Readiness::kReady) return server;
    if (ready == Readiness::kExited) server->pid_ = -1;
    if (ready == Readiness::kTimedOut)
      return Status::Unavailable("clickhouse-server not answering after 60 s; see " + dir + "/error.log");
    last = Status::Unavailable("clickhouse-server exited during start; " + dir + "/error.log:\n" +
                               Tail(dir + "/error.log", 2000));
  }
  return last;
}

std::vector<std::string> BenchClickHouse::ServeArgs() const {
  return {"--clickhouse-url", url(), "--clickhouse-database", database_};
}

BenchClickHouse::~BenchClickHouse() {
  if (drop_) {
    Result<std::string> dropped = ClickHouseQuery(
        http_, "", "DROP DATABASE IF EXISTS " + database_ + (cluster_.empty() ? "" : " ON CLUSTER " + cluster_));
    if (!dropped.ok()) std::fprintf(stderr, "bench: %s\n", dropped.status().message().c_str());
  }
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  int wstatus = 0;
  while (::waitpid(pid_, &wstatus, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &wstatus, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

namespace {

//! /proc/PID/stat from field 3 (state) on: the fields after the command
//! name, which is parenthesised and may hold spaces and parentheses. Empty
//! when the process is gone.
std::string StatFieldsOf(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return "";
  const size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return "";
  return line.substr(close + 2);
}

}  // namespace

double ProcessCpuSecondsOf(pid_t pid) {
  const std::string fields = StatFieldsOf(pid);
  if (fields.empty()) return -1;
  std::istringstream rest(fields);
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // rest starts at field 3 (state); utime is field 14, stime 15.
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

namespace {

//! A "Name:   N kB" line of /proc/PID/status in bytes; 0 if unknown.
uint64_t StatusKilobytesOf(pid_t pid, const char* field) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(f, line)) {
    if (line.compare(0, n, field) == 0) {
      std::istringstream in(line.substr(n));
      uint64_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

}  // namespace

uint64_t PeakRssBytesOf(pid_t pid) { return StatusKilobytesOf(pid, "VmHWM:"); }

uint64_t CurrentRssBytesOf(pid_t pid) { return StatusKilobytesOf(pid, "VmRSS:"); }

bool ProcessIsRunning(pid_t pid) {
  const std::string fields = StatFieldsOf(pid);
  return !fields.empty() && fields[0] != 'Z' && fields[0] != 'X' && fields[0] != 'x';
}

bool FindJsonNumber(const std::string& json, std::initializer_list<const char*> path, uint64_t* out) {
  size_t pos = 0;
  size_t n = 0;
  for (const char* key : path) {
    ++n;
    std::string quoted = std::string("\"") + key + "\"";
    for (;;) {
      pos = json.find(quoted, pos);
      if (pos == std::string::npos) return false;
      pos += quoted.size();
      while (pos < json.size() && (json[pos] == ' ' || json[pos] == ':')) ++pos;
      bool last = n == path.size();
      // An intermediate key must open an object, the last one a number.
      if (pos < json.size() && (last ? (json[pos] >= '0' && json[pos] <= '9') : json[pos] == '{')) break;
    }
  }
  auto r = std::from_chars(json.data() + pos, json.data() + json.size(), *out);
  return r.ec == std::errc();
}

Result<DeepHealth> FetchDeepHealth(const HttpEndpoint& api, bool fresh) {
  std::string body;
  // The long timeout either way: a server with no measurement cached (just
  // opened, or past its reuse age) measures before it answers, 24-50 s at 1B spans.
  auto code = HttpGet(api, fresh ? "/api/health/deep?fresh=1" : "/api/health/deep", &body, 600000);
  if (!code.ok()) return code.status();
  if (*code != 200) return Status::Unavailable("GET /api/health/deep: HTTP " + std::to_string(*code));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body).get(doc) != simdjson::SUCCESS) return Status::Unavailable("GET /api/health/deep: not JSON");
  auto number = [](simdjson::dom::element e, uint64_t* out) {
    double d = 0;
    if (e.get_double().get(d) == simdjson::SUCCESS && d >= 0) *out = static_cast<uint64_t>(d);
  };
  DeepHealth h;
  const char* names[kSignalCount] = {"spans", "logs", "metric_points"};
  const char* writers[kSignalCount] = {"spans", "logs", "metrics"};
  for (int s = 0; s < kSignalCount; ++s) {
    number(doc["rows"][names[s]], &h.rows[s]);
    number(doc["writer_queue"][writers[s]]["commits"], &h.commits[s]);
    simdjson::dom::element sig = doc["engine"]["signals"][writers[s]];
    uint64_t bytes = 0, stored = 0;
    if (sig["bytes"].is_number() && sig["stored_rows"].is_number()) {
      number(sig["bytes"], &bytes);
      number(sig["stored_rows"], &stored);
      h.signal_bytes[s] = bytes;
      h.signal_stored_rows[s] = stored;
    }
  }
  number(doc["rss_bytes"], &h.rss_bytes);
  number(doc["database_bytes"], &h.database_bytes);
  number(doc["wal_bytes"], &h.wal_bytes);
  number(doc["gate"]["rejections"], &h.gate_rejections);
  return h;
}

}  // namespace sightline::bench
