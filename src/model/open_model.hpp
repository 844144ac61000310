#pragma once
// The one way to open a model: what images, videos, `forward` and the fuzzers all call, so
// that every path through the binary reads, overrides and validates a model the same way.
//
//   source ""           the seeded, untrained model of `shape` and `seed`
//   source PATH         a checkpoint (safetensors or .pth) or the single-head layout, with the
//                       config.json / preprocessor_config.json beside it
//   source hub name     `hub(source)` gives the local file (hf:ORG/NAME[@REV] on the command line)
//
// The steps, each once and in this order: the weights file (the hub callback, else the path);
// the tensor file (safetensors mapped, or .pth, by its name or zip magic); the config files
// beside it; the overrides (the request wins over the config files, which win over the file's
// own __metadata__, which wins over the family's defaults; the file's head count and its
// config.json's must agree, a requested one wins over both and comes back as HeadsOverridden;
// the config's sizes must be the file's); family detection, the layout and loading
// (layout_check.hpp, vit_loader.hpp); normalisation;
// validation, once, after every setting is in; class labels.
//
// Why a callback for the hub, not a link to vitattn_hub: the hub is libcurl and libcrypto, and
// a fetch has a progress bar and log lines that belong to the command line. The model library
// stays free of the network (the fuzzers and unit tests link it without curl), and a test can
// stand in for the hub with a lambda that returns a folder of its own.
//
// Nothing here logs or names a command-line flag: what the caller should say (a guessed head
// count, the -v details) comes back as data in OpenedModel. Throws Error naming the file and the
// tensor or value; Error about roles::head_count (vit_loader.hpp) when an asked-for head count does not fit the file.
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/seeded_model.hpp"
#include "core/vit.hpp"
#include "model/class_labels.hpp"
#include "model/text_tower_loader.hpp"
#include "model/vit_loader.hpp"

namespace vitattn::model {

// The local weights file for a hub name, or nullopt when `source` is no hub name (a path).
// May throw Error (not cached while offline, not on the hub, a checksum mismatch…).
using HubLocator = std::function<std::optional<std::filesystem::path>(const std::string& source)>;

struct ModelRequest {
  std::string source;                        // "": seeded; else a path or a hub name (see above)
  SeededShape shape;                         // the seeded model's
  std::uint64_t seed = 0;
  std::string key;                           // .pth: the dict holding the weights; empty: the usual ones
  VitOverrides overrides;                    // family, heads, eps, GELU, position resampling
  std::optional<std::array<float, 3>> mean;  // normalisation, over anything the files say
  std::optional<std::array<float, 3>> std;
  bool labels = false;                       // find the class names of a classifier
  bool text_tower = false;                   // read the text tower too (CLIP's, SigLIP's), when the file holds one (OpenedModel::text);
                                             // not asked: the file is read exactly as without one
  HubLocator hub;                            // empty: every source is a path
};

// The file said nothing about its head count: d_model / 64 was assumed. Maps drawn with another
// count are wrong, so the caller should say so (and how to give the right one).
struct HeadsGuessed {
  int heads = 0;
  int d_model = 0;
};

// The head count asked for is not the one the file's __metadata__ or its config.json gives: the
// request wins, and the caller should say so, naming both.
struct HeadsOverridden {
  int asked = 0;
  int said = 0;
  std::string by;  // "the file's __metadata__", or the config.json's path
};

struct OpenedModel {
  VitModel model;
  ClassLabels labels;                        // empty unless asked for and the model has a classifier
  std::filesystem::path file;                // the weights file read; empty for the seeded model
  std::optional<HeadsGuessed> heads_guessed;
  std::optional<HeadsOverridden> heads_overridden;
  std::vector<std::string> details;          // for -v, in order: settings sources, summary, class names
  LoadedText text;                           // the text tower, when asked and the file holds one (text_tower_loader.hpp)
};

OpenedModel open_model(const ModelRequest& request);

// The same steps on a file's bytes already in memory (the fuzzers): `name` stands for the
// file in messages and, by its extension, picks .pth over safetensors as a path would. No
// config files (there is no folder); the request's source and hub are not used.
OpenedModel open_model_bytes(std::vector<std::uint8_t> bytes, const std::string& name, const ModelRequest& request);

}  // namespace vitattn::model
