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

std::string FindBinary() {
  if (const char* env = std::getenv("SIGHTLINE_CLICKHOUSE_SERVER"); env != nullptr && *env != '\0') return env;
  if (::access("/usr/sbin/clickhouse-server", X_OK) == 0) return "/usr/sbin/clickhouse-server";
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      size_t colon = p.find(':', start);
      std::string dir = p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      std::string candidate = dir + "/clickhouse-server";
      if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  return "";
}

class Server {
 public:
  ~Server() { Stop(); }

  Status Start() {
    const std::string binary = FindBinary();
    if (binary.empty()) {
      return Status::NotFound(
          "clickhouse-server not found (install the Debian package clickhouse-server, listed in "
          "third_party/versions.env TEST_APT_PACKAGES, or set SIGHTLINE_CLICKHOUSE_SERVER)");
    }
    std::string tmpl = (std::filesystem::temp_directory_path() / "sightline-clickhouse-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) return Status::IoError("cannot make a temp dir for clickhouse-server");
    dir_ = tmpl;
    const int http = FreePort(), tcp = FreePort(), interserver = FreePort();
    if (http == 0 || tcp == 0 || interserver == 0) return Status::IoError("no free loopback port");
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
             << "</yandex>\n";
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
    pid_ = ::fork();
    if (pid_ < 0) return Status::IoError("fork failed");
    if (pid_ == 0) {
      // The server goes with the test binary, even when that one is killed.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      FILE* f = std::freopen(out.c_str(), "w", stdout);
      (void)f;
      ::dup2(STDOUT_FILENO, STDERR_FILENO);
      ::execl(binary.c_str(), binary.c_str(), config_arg.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
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
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (::waitpid(pid_, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      pid_ = -1;
    }
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

struct Shared {
  std::once_flag once;
  Server server;
  Status started;
};

Shared& TheServer() {
  static Shared* shared = new Shared();  // stopped by the atexit handler below
  return *shared;
}

void StopAtExit() { TheServer().server.Stop(); }

}  // namespace

Result<std::string> ServerUrl() {
  Shared& s = TheServer();
  std::call_once(s.once, [&] {
    s.started = s.server.Start();
    std::atexit(StopAtExit);
  });
  if (!s.started.ok()) return s.started;
  return s.server.url();
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
