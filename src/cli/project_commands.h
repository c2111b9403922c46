#pragma once

#include <CLI/CLI.hpp>

namespace sightline {

//! Registers `sightline project list|retention`. Each opens the state
//! store of --state (or of --data) itself, so they work while servers run on
//! it (a new retention applies from its next maintenance pass). Each
//! runs from its CLI11 callback and throws CLI::RuntimeError(1) on failure.
void AddProjectCommands(CLI::App* app);

}  // namespace sightline
