#pragma once
// The command line read, and its errors said: the exit statuses, the flag of each role an Error
// may be about, and the one-line usage errors before any work.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "options.hpp"

namespace vitattn::cli {

inline constexpr int kExitOk = 0, kExitSomeFailed = 1, kExitUsage = 2;

// The flag that sets each value an Error may be about (its Subject's role), or a message of
// the pipeline names: the layers say "layer 3: …", "the log x.jsonl: …"; the command line
// says "--layer 3: …". Nothing for a role without a flag.
std::optional<std::string> flag_of(const std::string& role);

// Before any work: "--layer 3: the model has layers 0…2", "--heads: m.safetensors: …"
std::string option_message(const Error& e);

// The command line into `options`; nothing when it goes on, else the exit status (0 after
// --help and --version, 2 after a usage error, said in one line).
// The subcommands declared on the app, for the checks of each one parsed.
struct Subcommands {
  CLI::App& explain;
  CLI::App& forward;
  CLI::App& serve;
  CLI::App& eval;
};
std::optional<int> parse(CLI::App& app, int argc, char** argv, ImageOptions& options, const Subcommands& subs);

}  // namespace vitattn::cli
