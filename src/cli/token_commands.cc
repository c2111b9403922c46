#include "cli/token_commands.h"

#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include "auth/tokens.h"
#include "cli/state_option.h"
#include "state/state_store.h"

namespace sightline {

namespace {

struct TokenArgs {
  std::string project = "default";
  std::string scope = "ingest";
  std::string data = "./data";
  std::string state;
  std::string id;
};

[[noreturn]] void Fail(const char* command, const Status& status) {
  std::fprintf(stderr, "sightline token %s: %s\n", command, status.ToString().c_str());
  throw CLI::RuntimeError(1);
}

std::unique_ptr<StateStore> OpenOrFail(const char* command, const TokenArgs& args) {
  auto state = OpenStateStore(args.state.empty() ? args.data : args.state);
  if (!state.ok()) Fail(command, state.status());
  return std::move(state.value());
}

std::string UtcTime(int64_t unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void AddDataOption(CLI::App* cmd, TokenArgs* args) {
  cmd->add_option("--data", args->data, "Data directory")->envname("SIGHTLINE_DATA")->capture_default_str();
  AddStateOption(cmd, &args->state);
}

}  // namespace

void AddTokenCommands(CLI::App* app) {
  auto* token = app->add_subcommand("token", "Manage API/ingest tokens (works while the server runs)");
  token->require_subcommand(1);
  auto args = std::make_shared<TokenArgs>();

  auto* create = token->add_subcommand("create", "Mint a token for a project (printed once)");
  create->add_option("--project", args->project, "Project name (created if missing)")->capture_default_str();
  create
      ->add_option("--scope", args->scope,
                   "ingest: sends telemetry (OTLP) and cannot read; read: reads /api/v1 and cannot send")
      ->check(CLI::IsMember({"ingest", "read"}))
      ->capture_default_str();
  AddDataOption(create, args.get());
  create->callback([args] {
    auto state = OpenOrFail("create", *args);
    auto t = MintToken(state.get(), args->project, ParseTokenScope(args->scope).value_or(TokenScope::kIngest));
    if (!t.ok()) Fail("create", t.status());
    std::printf("%s\n", t->c_str());
  });

  auto* list = token->add_subcommand("list", "List a project's tokens: id, scope and creation time, never the token");
  list->add_option("--project", args->project, "Project name")->capture_default_str();
  AddDataOption(list, args.get());
  list->callback([args] {
    auto state = OpenOrFail("list", *args);
    // A mistyped project would otherwise look like one without tokens.
    auto project = state->FindProject(args->project);
    if (!project.ok()) Fail("list", project.status());
    if (!project->has_value()) Fail("list", Status::NotFound("no project '" + args->project + "'"));
    auto tokens = ListTokens(state.get(), args->project);
    if (!tokens.ok()) Fail("list", tokens.status());
    std::printf("%-*s  %-6s  %s\n", static_cast<int>(kTokenIdLength), "ID", "SCOPE", "CREATED (UTC)");
    for (const TokenInfo& t : *tokens) {
      std::printf("%s  %-6s  %s\n", t.id.c_str(), TokenScopeName(t.scope), UtcTime(t.created_at).c_str());
    }
  });

  auto* revoke = token->add_subcommand(
      "revoke", "Delete a token by its id; a running server refuses it within --auth-cache-ttl-ms");
  revoke->add_option("id", args->id, "Token id from `sightline token list`")->required();
  AddDataOption(revoke, args.get());
  revoke->callback([args] {
    auto state = OpenOrFail("revoke", *args);
    auto revoked = RevokeToken(state.get(), args->id);
    if (!revoked.ok()) Fail("revoke", revoked.status());
    std::printf("revoked token %s of project '%s'\n", revoked->id.c_str(), revoked->project.c_str());
  });
}

}  // namespace sightline
