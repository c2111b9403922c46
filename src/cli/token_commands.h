#pragma once

#include <CLI/CLI.hpp>

namespace sightline {

//! Registers `sightline token create|list|revoke`. Each opens the state store
//! of --state (or of --data) itself, so they work while servers run on it. Each
//! runs from its CLI11 callback and throws CLI::RuntimeError(1) on failure.
void AddTokenCommands(CLI::App* app);

}  // namespace sightline
