// The settings record's options: every option given, as given, but those that change no
// output's bytes; the order they were typed in does not matter; files by content.
#include "cli/settings_record.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "cli/eval_options.hpp"
#include "cli/options.hpp"
#include "files/content_hash.hpp"
#include "test_util.hpp"

namespace vitattn::cli {
namespace {
namespace fs = std::filesystem;

// The record of a command line (without the program name), the seeded model.
std::string record_of(std::vector<std::string> args) {
  CLI::App app;
  ImageOptions o;
  add_options(app, o);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  return settings_record(recorded_options(app), std::nullopt);
}

TEST(SettingsRecord, EveryRowOfTheTableIsAnOption) {
  CLI::App app;
  ImageOptions o;
  add_options(app, o);
  EvalCommandOptions e;
  int verbosity = 0;
  CLI::App* eval = add_eval_command(app, e, verbosity);  // the other command that writes records
  const auto is_option_of = [](const CLI::App& a, const std::string& name) {
    const auto options = a.get_options();
    return std::any_of(options.begin(), options.end(), [&](const CLI::Option* opt) { return option_name(*opt) == name; });
  };
  for (const OptionRecord& r : option_records())
    EXPECT_TRUE(is_option_of(app, r.name) || is_option_of(*eval, r.name)) << r.name << " is no option of vitattn";
}

TEST(SettingsRecord, EvalsRecordSaysItsCommandAndItsLabelsByContent) {
  test::TempDir d;
  std::ofstream(d / "labels.csv") << "a.png,3\n";
  fs::create_directories(d / "moved");
  fs::copy_file(d / "labels.csv", d / "moved/labels.csv");
  const std::string record = settings_record({{"--labels-csv", {(d / "labels.csv").string()}}}, std::nullopt, "eval");
  EXPECT_EQ(record, settings_record({{"--labels-csv", {(d / "moved/labels.csv").string()}}}, std::nullopt, "eval"));
  EXPECT_NE(record.find("\ncommand: eval\n"), std::string::npos) << record;
  EXPECT_NE(record.find("\n--labels-csv file: XXH64 "), std::string::npos) << record;
  EXPECT_NE(settings_record({}, std::nullopt, "eval"), settings_record({}, std::nullopt)) << "eval's and the image command's";
}

TEST(SettingsRecord, OptionsThatChangeOutputsAreInItAndTheOthersNot) {
  const std::string plain = record_of({"in/"});
  EXPECT_EQ(record_of({"in/", "-o", "elsewhere", "-j", "3", "-q", "-v", "--shard", "2/3", "--skip-existing", "-r",
                       "--log-json", "log.jsonl", "--max-pixels", "1000", "--strict"}),
            plain);
  const std::string layer3 = record_of({"in/", "--layer", "3", "--colormap", "inferno"});
  EXPECT_NE(layer3, plain);
  EXPECT_NE(layer3.find("\n--layer 3\n"), std::string::npos) << layer3;
  EXPECT_EQ(record_of({"--colormap", "inferno", "in/", "--layer", "3", "-j", "1"}), layer3) << "the order typed matters";
  EXPECT_NE(record_of({"in/", "--layer", "2", "--colormap", "inferno"}), layer3);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--seed", "1"}, {"--alpha", "0.3"}, {"--format", "jpg"}, {"--quality", "80"},
        {"--top", "2"}, {"--report"}, {"--head", "2"}, {"--method", "rollout"}, {"--threshold", "0.5"},
        {"--img-size", "64"}, {"--every", "2"}, {"--smooth", "0.5"}, {"--no-scale"}, {"--save-attention"}}) {
    std::vector<std::string> with = args;
    with.push_back("in/");
    EXPECT_NE(record_of(with), plain) << args.front() << " is not in the record";
  }
}

TEST(SettingsRecord, FilesAreRecordedByContent) {
  test::TempDir d;
  std::ofstream(d / "m.safetensors", std::ios::binary) << "weights";
  fs::create_directories(d / "moved");
  fs::copy_file(d / "m.safetensors", d / "moved/m.safetensors");
  const std::string here = settings_record({}, d / "m.safetensors");
  EXPECT_EQ(here, settings_record({}, d / "moved/m.safetensors")) << "the same weights elsewhere";
  EXPECT_NE(here.find("model: " + files::describe(files::file_digest(d / "m.safetensors")) + "\n"), std::string::npos) << here;
  std::ofstream(d / "config.json") << "{}";  // read beside the weights: in the record too
  const std::string with_config = settings_record({}, d / "m.safetensors");
  EXPECT_NE(with_config, here);
  EXPECT_NE(with_config.find("model config.json: XXH64 "), std::string::npos) << with_config;
  // --model itself is not recorded by name; a --pca-fit file by its content.
  const std::vector<GivenOption> model_named{{"--model", {(d / "m.safetensors").string()}}};
  EXPECT_EQ(settings_record(model_named, d / "m.safetensors"), with_config);
  std::ofstream(d / "fit.npy") << "fit";
  fs::copy_file(d / "fit.npy", d / "moved/fit.npy");
  EXPECT_EQ(settings_record({{"--pca-fit", {(d / "fit.npy").string()}}}, std::nullopt),
            settings_record({{"--pca-fit", {(d / "moved/fit.npy").string()}}}, std::nullopt));
  EXPECT_NE(settings_record({{"--pca-fit", {"batch"}}}, std::nullopt).find("\n--pca-fit batch\n"), std::string::npos);
}

}  // namespace
}  // namespace vitattn::cli
