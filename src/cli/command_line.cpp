#include "command_line.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <vector>

#include "eval_options.hpp"
#include "explain.hpp"
#include "files/text.hpp"
#include "forward_command.hpp"
#include "image/image_loader.hpp"
#include "model/single_head_layout.hpp"
#include "pipeline/output_guard.hpp"
#include "pipeline/run_batch.hpp"
#include "pipeline/view.hpp"
#include "scale_out.hpp"
#include "settings_record.hpp"

namespace vitattn::cli {
namespace fs = std::filesystem;

std::optional<std::string> flag_of(const std::string& role) {
  static const std::pair<const char*, const char*> kFlags[] = {
      {pipeline::roles::layer, "--layer"},         {pipeline::roles::head, "--head"},
      {pipeline::roles::input_size, "--img-size"}, {pipeline::roles::keep_aspect, "--keep-aspect"},
      {model::roles::head_count, "--heads"},          {model::roles::saved_model, "--save-model"},
      {image::roles::pixel_limit, "--max-pixels"},    {image::roles::strict_decoding, "--strict"},
      {pipeline::roles::method, "--method"},       {pipeline::roles::class_choice, "--class"},
      {pipeline::roles::legrad_from, "--legrad-from"},
      {pipeline::roles::chefer_from, "--first-layer"}, {pipeline::roles::query, "--query"},
      {pipeline::roles::log, "--log-json"},        {kHeatmapRole, "--heatmap"},
      {kPageRole, "--html"},                       {pipeline::roles::recursive, "-r"},
      {pipeline::roles::shard, "--shard"},         {pipeline::roles::skip_existing, "--skip-existing"},
      {pipeline::roles::report, "--report"},       {pipeline::roles::top, "--top"},
      {pipeline::roles::faithfulness_scores, "--faithfulness"}, {pipeline::roles::pca, "--pca"},
      {pipeline::roles::pca_fit, "--pca-fit"}};
  for (const auto& [r, flag] : kFlags)
    if (role == r) return flag;
  return std::nullopt;
}

namespace {

// "--layer 3", "--save-model m.safetensors", "--max-pixels"; nothing for a role without a flag.
std::optional<std::string> flag_and_value(const Error& e) {
  if (!e.subject()) return std::nullopt;
  const auto flag = flag_of(e.subject()->role);
  if (!flag) return std::nullopt;
  return *flag + (e.subject()->value.empty() ? "" : " " + e.subject()->value);
}

// Edits (insert, delete, replace, swap two neighbours) from `a` to `b`, up to 3.
int edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  if (n > m + 3 || m > n + 3) return 3;
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return std::min(d[n][m], 3);
}

// A first input that is no file but a subcommand's name mistyped ("explian"): a usage error,
// said before any folder is made, instead of an image that fails to open.
void check_not_a_misspelt_command(const CLI::App& app, const ImageOptions& o) {
  if (o.inputs.empty()) return;
  const std::string& first = o.inputs.front();
  std::error_code ec;
  if (fs::symlink_status(first, ec).type() != fs::file_type::not_found) return;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (first.size() >= 3 && edit_distance(files::lower_case(first), sub->get_name()) <= 2)
      throw CLI::ValidationError(fmt::format("{}: no such file or folder; did you mean {}?", first, sub->get_name()));
}

// A subcommand takes its own options: one given before it belongs to the image command and
// would be dropped without a word ("vitattn -o out forward …"). -q and -v count for all.
void check_nothing_before(const CLI::App& app, const CLI::App& sub) {
  for (const CLI::Option* opt : app.get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() == 0 || name == "--quiet" || name == "--verbose") continue;
    if (!opt->nonpositional())
      throw CLI::ValidationError(fmt::format("{} takes no images; give its own arguments after it", sub.get_name()));
    throw CLI::ValidationError(
        fmt::format("{} goes after {}: vitattn {} {} …", name, sub.get_name(), sub.get_name(), name));
  }
}

// The command a usage error is about, as its help is asked for: "vitattn serve" when a
// subcommand was reached (each has its own --help), else "vitattn".
std::string command_name(const CLI::App& app) {
  const std::vector<CLI::App*> subs = app.get_subcommands();  // those parsed, the first one reached first
  return subs.empty() ? "vitattn" : "vitattn " + subs.front()->get_name();
}

// CLI11's message, but for arguments left over: CLI11 2.1 lists them last first ("3 --heads");
// here they are in the order given ("--heads 3"), from every command that has some.
std::string usage_error_text(const CLI::App& app, const CLI::ParseError& e) {
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return e.what();
  const std::vector<std::string> extras = app.remaining(true);
  if (extras.empty()) return e.what();
  std::string listed;
  for (const std::string& a : extras) listed += (listed.empty() ? "" : " ") + a;
  return (extras.size() > 1 ? "The following arguments were not expected: " : "The following argument was not expected: ") +
         listed;
}

}  // namespace

std::string option_message(const Error& e) {
  const auto flag = flag_and_value(e);
  if (!flag) return e.what();
  return *flag + ": " + (e.source().empty() ? "" : e.source() + ": ") + e.detail();
}

std::optional<int> parse(CLI::App& app, int argc, char** argv, ImageOptions& options, const Subcommands& subs) {
  try {
    app.parse(argc, argv);
    if (subs.explain.parsed()) check_nothing_before(app, subs.explain);
    if (subs.serve.parsed()) check_nothing_before(app, subs.serve);
    if (subs.forward.parsed()) {
      check_nothing_before(app, subs.forward);
      check_forward(subs.forward);
    }
    if (subs.eval.parsed()) {
      check_nothing_before(app, subs.eval);
      check_eval(subs.eval);
    }
    if (!subs.explain.parsed() && !subs.forward.parsed() && !subs.serve.parsed() && !subs.eval.parsed()) {
      check_not_a_misspelt_command(app, options);
      check_combinations(app, options);
      check_scale_out(app, options.scale_out);
    }
    options.model.img_size_given = app.count("--img-size") > 0;
    options.recorded = recorded_options(app);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
    // One line, like every other error, instead of CLI11's message and usage.
    std::string what = usage_error_text(app, e);
    for (char& c : what)
      if (c == '\n') c = ' ';
    std::cerr << "error: " << what << " (see " << command_name(app) << " --help)\n";
    return kExitUsage;
  }
  return std::nullopt;
}

}  // namespace vitattn::cli
