#include "cli/serve_config.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <utility>

namespace sightline {
namespace {

bool EnvironmentSets(const std::string& name) {
  const char* value = name.empty() ? nullptr : std::getenv(name.c_str());
  return value != nullptr && *value != '\0';
}

const CLI::Option* ConfigurableOption(const CLI::App& app, const std::string& key) {
  const CLI::Option* option = app.get_option_no_throw("--" + key);
  return option != nullptr && option->get_configurable() ? option : nullptr;
}

// CLI11's TOML reader, with top-level keys moved into `serve` and the keys
// whose environment variable is set dropped, so the variable wins.
class ServeConfigFormat : public CLI::ConfigTOML {
 public:
  ServeConfigFormat(const CLI::App* root, const CLI::App* serve) : root_(root), serve_(serve) {}

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::vector<CLI::ConfigItem> items = CLI::ConfigTOML::from_config(input);
    std::vector<CLI::ConfigItem> kept;
    for (CLI::ConfigItem& item : items) {
      const bool marker = item.name == "++" || item.name == "--";  // a section's start or end
      if (item.parents.empty() && !marker && ConfigurableOption(*serve_, item.name) != nullptr) {
        item.parents = {serve_->get_name()};
      }
      const CLI::App* owner = item.parents.empty()                                           ? root_
                              : item.parents == std::vector<std::string>{serve_->get_name()} ? serve_
                                                                                             : nullptr;
      if (marker) {
        kept.push_back(std::move(item));
        continue;
      }
      const CLI::Option* option = owner == nullptr ? nullptr : ConfigurableOption(*owner, item.name);
      if (option == nullptr) {
        // CLI11's own message would be "INI was not able to parse <key>".
        throw CLI::ConfigError("config file: unknown key '" + item.fullname() +
                               "' (keys are the flags of `sightline serve --help` without their dashes)");
      }
      if (EnvironmentSets(option->get_envname())) continue;
      kept.push_back(std::move(item));
    }
    return kept;
  }

 private:
  const CLI::App* root_;
  const CLI::App* serve_;
};

void AppendOptions(const CLI::App& app, const std::vector<std::string>& secrets, std::string* out) {
  for (const CLI::Option* option : app.get_options()) {
    if (!option->get_configurable() || option->get_lnames().empty()) continue;
    const std::string key = option->get_single_name();
    std::string value;
    if (!option->results().empty()) {
      value = CLI::detail::ini_join(option->reduced_results());
    } else if (!option->get_default_str().empty()) {
      value = CLI::detail::convert_arg_for_ini(option->get_default_str());
    } else if (option->get_expected_min() == 0) {
      value = "false";  // a flag not given
    }
    const bool secret = std::find(secrets.begin(), secrets.end(), key) != secrets.end();
    *out += "\n# " + option->get_description();
    if (!option->get_envname().empty()) *out += " (" + option->get_envname() + ")";
    *out += "\n";
    if (secret || value.empty()) {
      *out += "# " + key + " = \"\"\n";
    } else {
      *out += key + " = " + value + "\n";
    }
  }
}

}  // namespace

void ForwardRootOption(CLI::App* serve, CLI::Option* root_option, const std::string& name) {
  serve
      ->add_option_function<std::string>(
          name, [root_option](const std::string& value) { root_option->add_result(value); },
          root_option->get_description())
      ->trigger_on_parse()
      ->configurable(false);
}

void AddServeConfigFile(CLI::App* root, CLI::App* serve) {
  CLI::Option* file = root->set_config("--config", "", "Read serve options from this TOML file");
  file->group("");  // documented on `serve`, where users put it
  root->config_formatter(std::make_shared<ServeConfigFormat>(root, serve));
  root->allow_config_extras(CLI::config_extras_mode::error);
  serve
      ->add_option_function<std::string>(
          "--config", [file](const std::string& path) { file->add_result(path); },
          "TOML file of serve options (key = value, the flag names without dashes; `--print-config` writes one); "
          "flags and SIGHTLINE_* variables override it")
      ->trigger_on_parse()
      ->configurable(false);
}

std::string ServeConfigText(const CLI::App& root, const CLI::App& serve, const std::vector<std::string>& secrets) {
  std::string out =
      "# Sightline: configuration of `sightline serve --config FILE`.\n"
      "# Keys are the flags of `sightline serve --help` without their dashes. A command-line\n"
      "# flag, then its SIGHTLINE_* environment variable (in brackets), override a value here.\n";
  AppendOptions(root, secrets, &out);
  AppendOptions(serve, secrets, &out);
  return out;
}

}  // namespace sightline
