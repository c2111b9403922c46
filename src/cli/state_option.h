#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace sightline {

//! `--state URL` (SIGHTLINE_STATE) on a command that opens the state store:
//! empty means state.sqlite in --data; `postgres://user@host:5432/db` a
//! PostgreSQL database, shared by every node (and CLI) that names it.
inline void AddStateOption(CLI::App* cmd, std::string* state) {
  cmd->add_option("--state", *state,
                  "State store (projects, tokens, users, sessions): empty = state.sqlite in --data; "
                  "postgres://user@host:5432/db = a PostgreSQL database several nodes share (a libpq URL; keep "
                  "the password in PGPASSWORD or ~/.pgpass)")
      ->envname("SIGHTLINE_STATE");
}

}  // namespace sightline
