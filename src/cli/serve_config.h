#pragma once

// The configuration file of `sightline serve`: a TOML file of `key = value`
// lines, one per serve option (the flag's name without its dashes), read with
// CLI11's own config support. Precedence, highest first: a command-line flag,
// its SIGHTLINE_* environment variable, the config file, the built-in default.
//
// CLI11 2.1 reads a config file only for the root App and applies it before
// environment variables (so a file would beat the environment); the wiring
// below keeps CLI11's parser and fixes both: `serve --config` hands the path
// to the root's config option, and keys whose variable is set are dropped
// from the file before CLI11 applies it.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace sightline {

//! Makes `serve` accept `name` (e.g. "--log-level") too, so users can write
//! `sightline serve --log-level debug` as well as `sightline --log-level debug
//! serve`: a value given after `serve` is handed to the root's option as it is
//! parsed, so it counts as given on the command line. Call with a root option
//! that `serve` does not define itself.
void ForwardRootOption(CLI::App* serve, CLI::Option* root_option, const std::string& name);

//! Adds `--config FILE` to `serve` (and, hidden, to the root, where CLI11
//! reads it). Keys at the top level of the file name serve options, or a root
//! option forwarded with ForwardRootOption (log-level); a `[serve]` section is
//! accepted too. An unknown key, or a value a flag would reject, fails the
//! parse. Call after every serve option is added.
void AddServeConfigFile(CLI::App* root, CLI::App* serve);

//! Every configurable option of `serve` (and the root's, like log-level), in
//! the config file's format, each with its help text and variable: the
//! value it has after parsing (flag, variable, file or default). An option
//! without a value is written commented out. Options named in `secrets` are
//! always commented out and their values never written.
std::string ServeConfigText(const CLI::App& root, const CLI::App& serve, const std::vector<std::string>& secrets);

}  // namespace sightline
