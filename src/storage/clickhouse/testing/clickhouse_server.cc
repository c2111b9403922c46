#include "storage/clickhouse/testing/clickhouse_server.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "storage/clickhouse/http_client.h"

namespace sightline::clickhouse::testing {

namespace {

//! A port that was free a moment ago (bound to port 0, then closed).
int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

//! `name` in a directory of the PATH; "" when none has it.
std::string FindOnPath(const std::string& name) {
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      size_t colon = p.find(':', start);
      std::string dir = p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      std::string candidate = dir + "/" + name;
      if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  return "";
}

std::string FindBinary() {
  if (const char* env = std::getenv("SIGHTLINE_CLICKHOUSE_SERVER"); env != nullptr && *env != '\0') return env;
  if (::access("/usr/sbin/clickhouse-server", X_OK) == 0) return "/usr/sbin/clickhouse-server";
  return FindOnPath("clickhouse-server");
}

Result<std::filesystem::path> MakeTempDir(const char* prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr) return Status::IoError(std::string("cannot make a temp dir for ") + prefix);
  return std::filesystem::path(tmpl);
}

//! Forks and execs `argv` with stdout and stderr to `out`; the child dies
//! with the test binary, even when that one is killed.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    FILE* f = std::freopen(out.c_str(), "w", stdout);
    (void)f;
    ::dup2(STDOUT_FILENO, STDERR_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

//! The last 40 lines of `file` to stderr, under its name.
void PrintTail(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(std::move(line));
    if (lines.size() > 40) lines.erase(lines.begin());
  }
  std::fprintf(stderr, "--- the end of %s:\n", file.c_str());
  for (const std::string& line : lines) std::fprintf(stderr, "%s\n", line.c_str());
}

//! SIGTERM, then SIGKILL after 20 s; reaps the process.
void Terminate(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGTERM);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

//! The ports of one clickhouse-server.
struct Ports {
  int http = 0, tcp = 0, interserver = 0;
  bool ok() const { return http != 0 && tcp != 0 && interserver != 0; }
  static Ports Free() { return Ports{FreePort(), FreePort(), FreePort()}; }
};

class Server {
 public:
  ~Server() { Stop(); }

  //! Starts the server on `ports`; `extra` is XML added to its config (the
  //! cluster's remote_servers, zookeeper and macros).
  Status Start(Ports ports = Ports::Free(), const std::string& extra = "") {
    const std::string binary = FindBinary();
    if (binary.empty()) {
      return Status::NotFound(
          "clickhouse-server not found (install the Debian package clickhouse-server, listed in "
          "third_party/versions.env TEST_APT_PACKAGES, or set SIGHTLINE_CLICKHOUSE_SERVER)");
    }
    SL_ASSIGN_OR_RETURN(dir_, MakeTempDir("sightline-clickhouse"));
    if (!ports.ok()) return Status::IoError("no free loopback port");
    const int http = ports.http, tcp = ports.tcp, interserver = ports.interserver;
    const std::string d = dir_.string();
    {
      std::ofstream config(dir_ / "config.xml");
      config << "<?xml version=\"1.0\"?>\n<yandex>\n"
             << "  <logger><level>warning</level><log>" << d << "/server.log</log><errorlog>" << d
             << "/error.log</errorlog><console>0</console></logger>\n"
             << "  <http_port>" << http << "</http_port>\n  <tcp_port>" << tcp << "</tcp_port>\n"
             << "  <interserver_http_port>" << interserver << "</interserver_http_port>\n"
             << "  <listen_host>127.0.0.1</listen_host>\n"
             << "  <path>" << d << "/data/</path>\n  <tmp_path>" << d << "/tmp/</tmp_path>\n"
             << "  <user_files_path>" << d << "/user_files/</user_files_path>\n"
             << "  <format_schema_path>" << d << "/format_schemas/</format_schema_path>\n"
             << "  <users_config>" << d << "/users.xml</users_config>\n"
             << "  <default_profile>default</default_profile>\n  <default_database>default</default_database>\n"
             << "  <mark_cache_size>67108864</mark_cache_size>\n"
             << "  <max_concurrent_queries>100</max_concurrent_queries>\n"
             // Below the client's idle limit (2 s), so the tests see the
             // server close a kept-alive connection first.
             << "  <keep_alive_timeout>1</keep_alive_timeout>\n"
             << "  <interserver_http_host>127.0.0.1</interserver_http_host>\n"
             << extra << "</yandex>\n";
      std::ofstream users(dir_ / "users.xml");
      users << "<?xml version=\"1.0\"?>\n<yandex>\n  <profiles><default></default></profiles>\n"
            << "  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks>"
            << "<profile>default</profile><quota>default</quota></default>"
            << "<" << kTestUser << "><password>" << kTestPassword << "</password><networks><ip>127.0.0.1</ip>"
            << "</networks><profile>default</profile><quota>default</quota></" << kTestUser << "></users>\n"
            << "  <quotas><default></default></quotas>\n</yandex>\n";
      if (!config || !users) return Status::IoError("cannot write the clickhouse-server config in " + d);
    }
    const std::string config_arg = "--config-file=" + (dir_ / "config.xml").string();
    const std::string out = (dir_ / "stdout.log").string();
    pid_ = Spawn({binary, config_arg}, out);
    if (pid_ < 0) return Status::IoError("fork failed");
    url_ = "http://127.0.0.1:" + std::to_string(http);
    Endpoint e;
    e.port = std::to_string(http);
    e.database = "default";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return Status::Unavailable("clickhouse-server exited at start; see " + out + " and " + d + "/error.log");
      }
      Connection c(e);
      Request ping;
      ping.query = "SELECT 1";
      ping.use_database = false;
      if (c.Execute(ping).ok()) {
        answered_ = true;
        return Status::Ok();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Status::Unavailable("clickhouse-server did not answer within 60 s; see " + d + "/error.log");
  }

  void Stop() {
    // A server that died under the tests (they then fail with "connection
    // refused") says so, with its error log, and keeps its directory.
    int status = 0;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      answered_ = false;
      std::fprintf(stderr, "clickhouse-server exited during the tests (%s %d); its files stay in %s\n",
                   WIFSIGNALED(status) ? "signal" : "exit code",
                   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), dir_.c_str());
      PrintTail(dir_ / "error.log");
      PrintTail(dir_ / "stdout.log");
    }
    Terminate(pid_);
    pid_ = -1;
    // A server that never answered leaves its logs for the failure message.
    if (!dir_.empty() && answered_) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

  const std::string& url() const { return url_; }

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  bool answered_ = false;
  std::string url_;
};

//! A standalone ZooKeeper (Debian's zookeeper package, run from its jar
//! with a config of its own), for the cluster's DDL queue and replication.
class ZooKeeper {
 public:
  ~ZooKeeper() { Stop(); }

  Status Start() {
    std::string java = std::getenv("JAVA") != nullptr ? std::getenv("JAVA") : "";
    if (java.empty()) java = ::access("/usr/bin/java", X_OK) == 0 ? "/usr/bin/java" : FindOnPath("java");
    std::string jar = std::getenv("SIGHTLINE_ZOOKEEPER_JAR") != nullptr ? std::getenv("SIGHTLINE_ZOOKEEPER_JAR")
                                                                        : "/usr/share/java/zookeeper.jar";
    if (java.empty() || ::access(jar.c_str(), R_OK) != 0) {
      return Status::NotFound("java or " + jar +
                              " not found (install the Debian package zookeeper, listed in third_party/versions.env "
                              "TEST_APT_PACKAGES, or set SIGHTLINE_ZOOKEEPER_JAR)");
    }
    SL_ASSIGN_OR_RETURN(dir_, MakeTempDir("sightline-zookeeper"));
    port_ = FreePort();
    if (port_ == 0) return Status::IoError("no free loopback port");
    {
      std::ofstream cfg(dir_ / "zoo.cfg");
      cfg << "tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=" << (dir_ / "data").string() << "\nclientPort=" << port_
          << "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
          << "maxClientCnxns=0\n4lw.commands.whitelist=srvr\n";
      if (!cfg) return Status::IoError("cannot write " + (dir_ / "zoo.cfg").string());
    }
    const std::string out = (dir_ / "zookeeper.log").string();
    pid_ = Spawn(
        {java, "-Xmx256m", "-cp", jar, "org.apache.zookeeper.server.ZooKeeperServerMain", (dir_ / "zoo.cfg").string()},
        out);
    if (pid_ < 0) return Status::IoError("fork failed");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return Status::Unavailable("zookeeper exited at start; see " + out);
      }
      if (Answers()) {
        answered_ = true;
        return Status::Ok();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return Status::Unavailable("zookeeper did not answer within 60 s; see " + out);
  }

  void Stop() {
    Terminate(pid_);
    pid_ = -1;
    if (!dir_.empty() && answered_) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

  int port() const { return port_; }

 private:
  //! Whether the server answers its "srvr" four-letter command.
  bool Answers() const {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    bool ok = false;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && ::write(fd, "srvr", 4) == 4) {
      char buf[64];
      ssize_t n = ::read(fd, buf, sizeof(buf));
      ok = n > 0 && std::string_view(buf, static_cast<size_t>(n)).find("Zookeeper version") != std::string_view::npos;
    }
    ::close(fd);
    return ok;
  }

  std::filesystem::path dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool answered_ = false;
};

//! ZooKeeper and two clickhouse-servers, each one shard of kTestCluster.
class Cluster {
 public:
  ~Cluster() { Stop(); }

  Status Start() {
    SL_RETURN_IF_ERROR(zookeeper_.Start());
    const Ports ports[2] = {Ports::Free(), Ports::Free()};
    std::string remote = std::string("  <remote_servers><") + kTestCluster + ">";
    for (const Ports& p : ports) {
      remote += "<shard><internal_replication>true</internal_replication><replica><host>127.0.0.1</host><port>" +
                std::to_string(p.tcp) + "</port></replica></shard>";
    }
    remote += std::string("</") + kTestCluster + "></remote_servers>\n";
    remote += "  <zookeeper><node><host>127.0.0.1</host><port>" + std::to_string(zookeeper_.port()) +
              "</port></node><session_timeout_ms>30000</session_timeout_ms></zookeeper>\n";
    remote += "  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>\n";
    for (int i = 0; i < 2; ++i) {
      const std::string macros = "  <macros><shard>" + std::to_string(i + 1) + "</shard><replica>replica" +
                                 std::to_string(i + 1) + "</replica></macros>\n";
      SL_RETURN_IF_ERROR(shards_[i].Start(ports[i], remote + macros));
    }
    return Status::Ok();
  }

  void Stop() {
    for (Server& s : shards_) s.Stop();
    zookeeper_.Stop();
  }

  std::vector<std::string> urls() const { return {shards_[0].url(), shards_[1].url()}; }

 private:
  ZooKeeper zookeeper_;
  Server shards_[2];
};

//! One T (Server or Cluster) per test binary: started at the first
//! Started() call, stopped at exit. Leaked on purpose: the atexit handler
//! needs it after static destructors may have run.
template <typename T>
struct Shared {
  std::once_flag once;
  T process;
  Status started;

  static Shared& Instance() {
    static Shared* shared = new Shared();
    return *shared;
  }
  //! The process, or why it did not start.
  static Result<T*> Started() {
    Shared& s = Instance();
    std::call_once(s.once, [&s] {
      s.started = s.process.Start();
      std::atexit([] { Instance().process.Stop(); });
    });
    if (!s.started.ok()) return s.started;
    return &s.process;
  }
};

}  // namespace

Result<std::vector<std::string>> ClusterUrls() {
  SL_ASSIGN_OR_RETURN(Cluster * cluster, Shared<Cluster>::Started());
  return cluster->urls();
}

StoreOptions ClusterStoreOptionsForTest(const std::string& hint, int shard) {
  StoreOptions o;
  Result<std::vector<std::string>> urls = ClusterUrls();
  o.clickhouse_url = urls.ok() ? (*urls)[static_cast<size_t>(shard) % urls->size()] : "http://127.0.0.1:1";
  o.clickhouse_database = UniqueDatabase(hint);
  o.clickhouse_cluster = kTestCluster;
  o.clickhouse_replicated = true;
  // One replica per shard: the default quorum would be none; 1 still sends
  // insert_quorum on every insert, through the Distributed tables.
  o.clickhouse_insert_quorum = 1;
  o.read_connections = 2;
  return o;
}

Result<std::string> ServerUrl() {
  SL_ASSIGN_OR_RETURN(Server * server, Shared<Server>::Started());
  return server->url();
}

std::string UniqueDatabase(const std::string& hint) {
  static std::atomic<int> n{0};
  std::string name = "t" + std::to_string(::getpid()) + "_" + std::to_string(n.fetch_add(1)) + "_";
  for (char c : hint)
    name.push_back((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_');
  return name.substr(0, 120);
}

StoreOptions StoreOptionsForTest(const std::string& hint) {
  StoreOptions o;
  Result<std::string> url = ServerUrl();
  // Never the default URL: a server of the machine's own must not get test data.
  o.clickhouse_url = url.ok() ? *url : "http://127.0.0.1:1";
  o.clickhouse_database = UniqueDatabase(hint);
  o.read_connections = 2;
  return o;
}

std::string ChdbUrl() {
  static const std::string* url = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sightline-chdb-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return new std::string("chdb:///nonexistent/sightline-chdb");
    static std::string dir = tmpl;
    // After the tests: the engine keeps running until the process ends, so
    // its files go with whatever it has not flushed.
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    return new std::string("chdb://" + tmpl);
  }();
  return *url;
}

StoreOptions ChdbStoreOptionsForTest(const std::string& hint) {
  StoreOptions o;
  o.clickhouse_url = ChdbUrl();
  o.clickhouse_database = UniqueDatabase(hint);
  o.read_connections = 2;
  return o;
}

StoreOptions StoreOptionsForTest(const std::string& variant, const std::string& hint) {
  return variant == "chdb" ? ChdbStoreOptionsForTest(hint) : StoreOptionsForTest(hint);
}

}  // namespace sightline::clickhouse::testing
