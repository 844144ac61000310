#pragma once
// The settings record each job writes last beside its outputs, <name>_settings.txt
// (pipeline/job_record.hpp): what made the outputs' bytes, so that --skip-existing redoes
// outputs made with other settings instead of passing them over. Text, a line each:
//
//   vitattn settings record: --skip-existing redoes these outputs for a run whose record differs
//   model: XXH64 0123456789abcdef of 2405128 bytes     the weights file, by content
//   model config.json: XXH64 … of 912 bytes            each settings file read beside it
//   --layer 3                                          each option given, as given
//   --pca-fit file: XXH64 … of 7780 bytes              an option naming a file: by content
//
// Every option given on the command line is in it, as written there, unless option_records()
// says otherwise: a new option is recorded without a word, and one that changes no output's
// bytes is one row of that table. Options not given are not listed: their defaults are the
// same in every run of one vitattn. Files are recorded by content, not by name, so a record
// made on another machine, or before the model file moved, still matches.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace vitattn::cli {

// How an option is in the record, when not as given.
enum class Recorded {
  no,       // it changes no output's bytes (where outputs go, which inputs, how many at once, messages)
  model,    // the model lines stand for it: the weights file read (a hub name resolved) by content
  content,  // a value that names a regular file is recorded by the file's content (others as given)
};
struct OptionRecord {
  const char* name;  // as option_name gives it: "--jobs", "inputs"
  Recorded how;
  const char* why;
};

// The options recorded otherwise than as given: the table.
const std::vector<OptionRecord>& option_records();

// "--jobs" for -j,--jobs; an option with no long name by its short one; a positional by its name.
std::string option_name(const CLI::Option& option);

// An option given on the command line: its name and its values as written.
struct GivenOption {
  std::string name;
  std::vector<std::string> values;
};

// The options of `app` given on its command line, in the order the app declares them (the
// order they were typed in does not matter), less those that change no output's bytes.
std::vector<GivenOption> recorded_options(const CLI::App& app);

// The whole record. `model_file`: the weights file read (nullopt: the seeded model, which its
// options given make); with it, the settings files read beside it that are there
// (model::model_config_files). Throws Error naming a file that cannot be read.
// `command`: the subcommand whose record it is ("eval"), a line "command: eval" after the
// first, so that its outputs' records never match another command's; empty for the image command.
std::string settings_record(const std::vector<GivenOption>& options, const std::optional<std::filesystem::path>& model_file,
                            const std::string& command = {});

}  // namespace vitattn::cli
