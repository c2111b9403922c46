#pragma once

#include <CLI/CLI.hpp>

namespace sightline {

//! Registers `sightline bench ...` subcommands on the app. Each runs from its
//! CLI11 callback and throws CLI::RuntimeError(code) on failure.
void AddBenchCommands(CLI::App* app);

}  // namespace sightline
