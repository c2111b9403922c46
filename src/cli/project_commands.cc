#include "cli/project_commands.h"

#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "cli/state_option.h"
#include "common/units.h"
#include "state/state_store.h"

namespace sightline {

namespace {

struct ProjectArgs {
  std::string data = "./data";
  std::string state;
  std::string project = "default";
  std::string signal;
  std::string retention;
};

[[noreturn]] void Fail(const char* command, const Status& status) {
  std::fprintf(stderr, "sightline project %s: %s\n", command, status.ToString().c_str());
  throw CLI::RuntimeError(1);
}

std::unique_ptr<StateStore> OpenOrFail(const char* command, const ProjectArgs& args) {
  auto state = OpenStateStore(args.state.empty() ? args.data : args.state);
  if (!state.ok()) Fail(command, state.status());
  return std::move(state.value());
}

std::string Shown(int64_t seconds) { return seconds == 0 ? "forever" : FormatDuration(seconds); }

}  // namespace

void AddProjectCommands(CLI::App* app) {
  auto* project = app->add_subcommand("project", "Projects and their settings (works while the server runs)");
  project->require_subcommand(1);
  auto args = std::make_shared<ProjectArgs>();

  auto* list = project->add_subcommand(
      "list", "List projects with their own retention per signal ('-': the server's --retention-<signal>)");
  list->add_option("--data", args->data, "Data directory")->envname("SIGHTLINE_DATA")->capture_default_str();
  AddStateOption(list, &args->state);
  list->callback([args] {
    auto state = OpenOrFail("list", *args);
    auto projects = state->ListProjects();
    if (!projects.ok()) Fail("list", projects.status());
    auto overrides = state->ListRetention();
    if (!overrides.ok()) Fail("list", overrides.status());
    std::map<std::pair<int64_t, std::string>, int64_t> own;
    for (const RetentionRecord& r : *overrides) own[{r.project_id, r.signal}] = r.seconds;
    std::printf("%-24s %-10s %-10s %-10s\n", "PROJECT", "SPANS", "LOGS", "METRICS");
    for (const ProjectRecord& p : *projects) {
      std::string cells[3];
      const char* signals[3] = {"spans", "logs", "metrics"};
      for (int s = 0; s < 3; ++s) {
        auto it = own.find({p.id, signals[s]});
        cells[s] = it == own.end() ? "-" : Shown(it->second);
      }
      std::printf("%-24s %-10s %-10s %-10s\n", p.name.c_str(), cells[0].c_str(), cells[1].c_str(), cells[2].c_str());
    }
  });

  auto* retention = project->add_subcommand(
      "retention",
      "Keep one signal of a project for a duration (7d, 12h, 30m), 'forever', or 'default' (the server's flag)");
  retention->add_option("--project", args->project, "Project name")->capture_default_str();
  retention->add_option("--signal", args->signal, "spans, logs or metrics")
      ->required()
      ->check(CLI::IsMember({"spans", "logs", "metrics"}));
  retention->add_option("duration", args->retention, "A duration such as 7d, 12h or 30m; forever; default")->required();
  retention->add_option("--data", args->data, "Data directory")->envname("SIGHTLINE_DATA")->capture_default_str();
  AddStateOption(retention, &args->state);
  retention->callback([args] {
    std::optional<int64_t> seconds;
    if (args->retention == "forever") {
      seconds = 0;
    } else if (args->retention != "default") {
      Result<int64_t> parsed = ParseDurationSeconds(args->retention);
      if (!parsed.ok()) Fail("retention", parsed.status());
      if (*parsed == 0)
        Fail("retention", Status::InvalidArgument("a retention of 0 would delete everything; "
                                                  "to keep data forever, say 'forever'"));
      seconds = *parsed;
    }
    auto state = OpenOrFail("retention", *args);
    Status set_status = state->SetRetention(args->project, args->signal, seconds);
    if (!set_status.ok()) Fail("retention", set_status);
    if (!seconds) {
      std::printf("project '%s' keeps %s for the server's --retention-%s\n", args->project.c_str(),
                  args->signal.c_str(), args->signal.c_str());
    } else {
      std::printf("project '%s' keeps %s %s%s\n", args->project.c_str(), args->signal.c_str(),
                  *seconds == 0 ? "" : "for ", Shown(*seconds).c_str());
    }
  });
}

}  // namespace sightline
