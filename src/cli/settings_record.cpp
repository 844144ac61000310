#include "settings_record.hpp"


#include "files/content_hash.hpp"
#include "model/model_config.hpp"

namespace vitattn::cli {
namespace fs = std::filesystem;

const std::vector<OptionRecord>& option_records() {
  static const std::vector<OptionRecord> kOptions{
      {"inputs", Recorded::no, "which images, not how they are drawn"},
      {"--output", Recorded::no, "where the outputs go"},
      {"--recursive", Recorded::no, "which images are found, and below which sub-folder their outputs go"},
      {"--skip-existing", Recorded::no, "whether done images are drawn again"},
      {"--jobs", Recorded::no, "the same bytes whatever -j"},
      {"--shard", Recorded::no, "which of the batch's images this process draws"},
      {"--shard-count", Recorded::no, "which of the batch's images this process draws"},
      {"--files-from", Recorded::no, "which images"},
      {"--null", Recorded::no, "how the --files-from list is read"},
      {"--log-json", Recorded::no, "the log, not the outputs"},
      {"--save-model", Recorded::no, "writes the model, not the images' outputs"},
      {"--max-pixels", Recorded::no, "whether an image is drawn, not how"},
      {"--strict", Recorded::no, "whether a damaged image is drawn, not how"},
      {"--quiet", Recorded::no, "messages"},
      {"--verbose", Recorded::no, "messages"},
      {"--model", Recorded::model, "the weights, wherever the file lies"},
      {"--pca-fit", Recorded::content, "a fit file's values, wherever it lies"},
      {"--labels-csv", Recorded::content, "eval's targets: the file's rows, wherever it lies"},
  };
  return kOptions;
}

std::string option_name(const CLI::Option& option) {
  if (!option.get_lnames().empty()) return "--" + option.get_lnames().front();
  if (!option.get_snames().empty()) return "-" + option.get_snames().front();
  return option.get_name(true);
}

namespace {

std::optional<Recorded> recorded_otherwise(const std::string& name) {
  for (const OptionRecord& r : option_records())
    if (name == r.name) return r.how;
  return std::nullopt;
}

// "model config.json: XXH64 … of … bytes"
std::string file_line(const std::string& what, const fs::path& file) {
  return what + ": " + files::describe(files::file_digest(file)) + "\n";
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string model_lines(const std::optional<fs::path>& model_file) {
  if (!model_file) return "model: seeded, by the options below\n";
  std::string lines = file_line("model", *model_file);
  for (const fs::path& beside : model::model_config_files(model_file->parent_path()))
    if (is_file(beside)) lines += file_line("model " + beside.filename().string(), beside);
  return lines;
}

std::string option_line(const GivenOption& option) {
  const std::optional<Recorded> how = recorded_otherwise(option.name);
  if (how == Recorded::model) return {};
  if (how == Recorded::content && option.values.size() == 1 && is_file(option.values.front()))
    return file_line(option.name + " file", option.values.front());
  std::string line = option.name;
  for (const std::string& value : option.values) line += " " + value;
  return line + "\n";
}

}  // namespace

std::vector<GivenOption> recorded_options(const CLI::App& app) {
  std::vector<GivenOption> given;
  for (const CLI::Option* option : app.get_options()) {
    GivenOption g{option_name(*option), option->results()};
    if (option->count() > 0 && recorded_otherwise(g.name) != Recorded::no) given.push_back(std::move(g));
  }
  return given;
}

std::string settings_record(const std::vector<GivenOption>& options, const std::optional<fs::path>& model_file,
                            const std::string& command) {
  std::string record = "vitattn settings record: --skip-existing redoes these outputs for a run whose record differs\n";
  if (!command.empty()) record += "command: " + command + "\n";
  record += model_lines(model_file);
  for (const GivenOption& option : options) record += option_line(option);
  return record;
}

}  // namespace vitattn::cli
