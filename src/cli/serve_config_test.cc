#include "cli/serve_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/testing/temp_dir.h"

namespace sightline {
namespace {

// A root App and a `serve` subcommand wired as cli/main.cc wires them, with a
// few options of each kind (text, checked number, flag, a secret).
struct Cli {
  CLI::App root{"test"};
  CLI::App* serve = nullptr;
  std::string log_level = "info";
  std::string otlp_http = "0.0.0.0:4318";
  int max_connections = 10000;
  bool require_auth = false;
  std::string password;
  std::string memory_limit;
  bool print_config = false;

  Cli() {
    CLI::Option* level = root.add_option("--log-level", log_level, "Log level")
                             ->envname("SL_TEST_LOG_LEVEL")
                             ->check(CLI::IsMember({"debug", "info", "warn"}))
                             ->capture_default_str();
    serve = root.add_subcommand("serve", "Run");
    serve->add_option("--otlp-http", otlp_http, "OTLP/HTTP address")
        ->envname("SL_TEST_OTLP_HTTP")
        ->capture_default_str();
    serve->add_option("--max-connections", max_connections, "Connections")
        ->envname("SL_TEST_MAX_CONNECTIONS")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    serve->add_flag("--metrics-require-auth", require_auth, "Auth on /metrics")->envname("SL_TEST_REQUIRE_AUTH");
    serve->add_option("--admin-password", password, "Password")->envname("SL_TEST_PASSWORD");
    serve->add_option("--duckdb-memory-limit", memory_limit, "Memory limit");
    serve->add_flag("--print-config", print_config, "Print")->configurable(false);
    ForwardRootOption(serve, level, "--log-level");
    AddServeConfigFile(&root, serve);
  }

  //! Parses argv (without the program name); the CLI11 error's text, or "" on success.
  std::string Parse(std::vector<std::string> args) {
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      root.parse(reversed);
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  }
};

class ServeConfigTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"SL_TEST_LOG_LEVEL", "SL_TEST_OTLP_HTTP", "SL_TEST_MAX_CONNECTIONS",
                             "SL_TEST_REQUIRE_AUTH", "SL_TEST_PASSWORD"})
      unsetenv(name);
  }

  std::string WriteConfig(const std::string& text) {
    std::string path = (dir_.path() / ("c" + std::to_string(files_++) + ".toml")).string();
    std::ofstream(path) << text;
    return path;
  }

  testing::TempDir dir_;
  int files_ = 0;
};

TEST_F(ServeConfigTest, TheFileSetsEveryKindOfOption) {
  Cli cli;
  std::string file = WriteConfig(
      "# comment\n"
      "log-level = \"debug\"\n"
      "otlp-http = \"127.0.0.1:9999\"\n"
      "max-connections = 12\n"
      "metrics-require-auth = true\n"
      "duckdb-memory-limit = \"2GB\"\n");
  ASSERT_EQ(cli.Parse({"serve", "--config", file}), "");
  EXPECT_EQ(cli.log_level, "debug");
  EXPECT_EQ(cli.otlp_http, "127.0.0.1:9999");
  EXPECT_EQ(cli.max_connections, 12);
  EXPECT_TRUE(cli.require_auth);
  EXPECT_EQ(cli.memory_limit, "2GB");
}

TEST_F(ServeConfigTest, AServeSectionIsAcceptedToo) {
  Cli cli;
  std::string file = WriteConfig("[serve]\nmax-connections = 7\n");
  ASSERT_EQ(cli.Parse({"serve", "--config", file}), "");
  EXPECT_EQ(cli.max_connections, 7);
}

TEST_F(ServeConfigTest, FlagBeatsVariableBeatsFile) {
  std::string file = WriteConfig(
      "log-level = \"debug\"\n"
      "otlp-http = \"127.0.0.1:1001\"\n"
      "max-connections = 11\n"
      "metrics-require-auth = true\n");
  setenv("SL_TEST_OTLP_HTTP", "127.0.0.1:2002", 1);
  setenv("SL_TEST_MAX_CONNECTIONS", "22", 1);
  setenv("SL_TEST_LOG_LEVEL", "warn", 1);
  setenv("SL_TEST_REQUIRE_AUTH", "false", 1);
  {
    Cli cli;
    ASSERT_EQ(cli.Parse({"serve", "--config", file, "--max-connections", "33"}), "");
    EXPECT_EQ(cli.max_connections, 33);          // flag over variable and file
    EXPECT_EQ(cli.otlp_http, "127.0.0.1:2002");  // variable over file
    EXPECT_EQ(cli.log_level, "warn");            // variable over file (a root option)
    EXPECT_FALSE(cli.require_auth);              // variable over file (a flag)
  }
  {
    Cli cli;  // log-level given after `serve` still beats the variable
    ASSERT_EQ(cli.Parse({"serve", "--log-level", "info", "--config", file}), "");
    EXPECT_EQ(cli.log_level, "info");
  }
  unsetenv("SL_TEST_OTLP_HTTP");
  {
    Cli cli;  // without the variable the file is back in force
    ASSERT_EQ(cli.Parse({"serve", "--config", file}), "");
    EXPECT_EQ(cli.otlp_http, "127.0.0.1:1001");
    EXPECT_EQ(cli.max_connections, 22);
  }
}

TEST_F(ServeConfigTest, LogLevelIsAcceptedBeforeAndAfterServe) {
  {
    Cli cli;
    ASSERT_EQ(cli.Parse({"--log-level", "debug", "serve"}), "");
    EXPECT_EQ(cli.log_level, "debug");
  }
  {
    Cli cli;
    ASSERT_EQ(cli.Parse({"serve", "--log-level", "warn"}), "");
    EXPECT_EQ(cli.log_level, "warn");
  }
  {
    Cli cli;  // the root's check applies to the forwarded value
    EXPECT_NE(cli.Parse({"serve", "--log-level", "loud"}), "");
  }
}

TEST_F(ServeConfigTest, UnknownKeysBadValuesAndMissingFilesFail) {
  {
    Cli cli;
    std::string error = cli.Parse({"serve", "--config", WriteConfig("max-conections = 5\n")});
    EXPECT_NE(error.find("max-conections"), std::string::npos) << error;
  }
  {
    Cli cli;
    EXPECT_NE(cli.Parse({"serve", "--config", WriteConfig("max-connections = -5\n")}), "");
  }
  {
    Cli cli;
    EXPECT_NE(cli.Parse({"serve", "--config", (dir_.path() / "absent.toml").string()}), "");
  }
  {
    Cli cli;  // --print-config is a command, not a setting
    EXPECT_NE(cli.Parse({"serve", "--config", WriteConfig("print-config = true\n")}), "");
  }
}

TEST_F(ServeConfigTest, PrintedConfigListsEveryOptionAndReadsBackTheSame) {
  setenv("SL_TEST_PASSWORD", "hunter2", 1);
  Cli cli;
  ASSERT_EQ(cli.Parse({"serve", "--max-connections", "44", "--metrics-require-auth", "--otlp-http", ""}), "");
  const std::vector<std::string> secrets = {"admin-password"};
  std::string text = ServeConfigText(cli.root, *cli.serve, secrets);
  EXPECT_NE(text.find("\nlog-level = \"info\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\notlp-http = \"\"\n"), std::string::npos) << text;  // "" turns a listener off
  EXPECT_NE(text.find("\nmax-connections = 44\n"), std::string::npos) << text;
  EXPECT_NE(text.find("(SL_TEST_MAX_CONNECTIONS)"), std::string::npos) << text;
  EXPECT_NE(text.find("\n# duckdb-memory-limit = \"\"\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n# admin-password = \"\"\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("hunter2"), std::string::npos) << text;
  EXPECT_EQ(text.find("print-config"), std::string::npos) << text;
  EXPECT_EQ(text.find("config ="), std::string::npos) << text;
  unsetenv("SL_TEST_PASSWORD");

  Cli again;
  ASSERT_EQ(again.Parse({"serve", "--config", WriteConfig(text)}), "");
  EXPECT_EQ(again.max_connections, 44);
  EXPECT_TRUE(again.require_auth);
  EXPECT_EQ(again.otlp_http, "");
  EXPECT_EQ(ServeConfigText(again.root, *again.serve, secrets), text);
}

}  // namespace
}  // namespace sightline
