#pragma once
// What to draw from a model, and whether a request fits it: the layer and head, the model
// input size, the patch cap. Checked once before any image is read, and per image where the
// image's shape matters (keep_aspect).
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/attention_maps.hpp"
#include "core/vit.hpp"
#include "class_choice.hpp"
#include "map_methods.hpp"

namespace vitattn::pipeline {

// The values an Error from the view checks may be about (core/error.hpp's Subject); the
// command line maps each to its flag.
namespace roles {
inline constexpr const char* layer = "layer";
inline constexpr const char* head = "head";
inline constexpr const char* input_size = "input size";
inline constexpr const char* keep_aspect = "keeping the aspect ratio";
inline constexpr const char* method = "method";
inline constexpr const char* class_choice = "class";
inline constexpr const char* legrad_from = "LeGrad's first layer";
inline constexpr const char* chefer_from = "Chefer's first layer";
inline constexpr const char* query = "query token";
}  // namespace roles

enum class HeadChoice { index, fuse, all };

// A head choice as every front end takes it (the image command's head option, serve's head
// parameter): one head by index, the heads fused (mean|max|min), or all of them.
struct HeadSpec {
  HeadChoice choice = HeadChoice::fuse;
  int index = 0;                         // with HeadChoice::index
  HeadFusion fusion = HeadFusion::mean;  // with HeadChoice::fuse
};
// "3", "mean", "MAX", "all" → HeadSpec; nullopt for anything else (a sign, "nan", "1.5", 6+
// digits). Whether the model has the head is check_view's.
std::optional<HeadSpec> parse_head(std::string_view text);
// As parse_head takes it: "3", "mean", "all".
std::string head_text(const HeadSpec& head);
// The head choices in words, for a message about a text parse_head refused.
inline constexpr const char* kHeadSyntax = "a head index (0, 1, …), mean, max, min or all";
// parse_head from a stream (how a command-line parser converts text); failbit when refused.
std::istream& operator>>(std::istream& in, HeadSpec& head);

// Whose attention row the attention and rollout maps draw: the class token's, or distilled
// DeiT's distillation token's (a model without one refuses it, check_view).
enum class QueryToken { cls, dist };

// What is drawn: one layer's head or fused heads, the rollout up to it, or the class-specific
// relevance maps of the layers up to it (map_methods.hpp), for chosen classes or the top-1.
struct EncoderView {
  // As asked, −1 = last and negative counts from the end; once checked (check_view's answer,
  // checked_options in process_image.hpp) the index 0…n_layers−1 it means, which every step
  // after the check reads (drawn_layer) rather than resolving it again.
  int layer = -1;
  HeadChoice head = HeadChoice::fuse;  // attention and rollout's heads
  int head_index = 0;             // with HeadChoice::index
  HeadFusion fusion = HeadFusion::mean;
  std::vector<MapMethod> methods{MapMethod::attention};  // each drawn, in this order
  std::vector<ChosenClass> classes;  // the class-specific methods' classes; empty: each image's most likely
  std::vector<std::string> class_names;  // the classifier's, to title a sheet's maps of the top-1; may be empty
  ClassSource class_source = ClassSource::classifier;  // texts: `classes` are the texts asked about
  int legrad_from = -2;           // LeGrad's first layer; negative counts from the end
  int chefer_from = 0;            // Chefer's first layer, counted alike (0: every layer)
  float discard_ratio = 0.0f;     // rollout's and grad-rollout's
  float lrp_gamma_linear = lrp_default_gamma_linear;  // AttnLRP's γs (core/lrp.hpp)
  float lrp_gamma_conv = lrp_default_gamma_conv;
  std::optional<float> threshold; // DINO mass mask, drawn as an outline
  int img_size = 0;               // 0: the model's own size
  bool keep_aspect = false;       // shorter side = img_size, longer side to the nearest patch multiple
  QueryToken query = QueryToken::cls;  // the attention and rollout maps' row
};

// The token row `query` names in `model`'s tokens: 0 for the class token, 1 for the distillation token.
int query_row(const VitModel& model, QueryToken query);

// True when `view` draws method m.
bool draws(const EncoderView& view, MapMethod m);

// True when a method of `view` takes the gradient of a class logit (a backward pass per class).
bool needs_gradients(const EncoderView& view);

// One map `view` draws, and the tag its files carry (job_outputs.hpp).
struct MapSlot {
  MapMethod method = MapMethod::attention;
  int head = -1;        // --head all: the head drawn; else −1
  int class_slot = -1;  // a class-specific method's: index into view.classes (0: the top-1 when none); else −1
  std::string tag;      // "" when the view draws one map: the plain names
};

// The maps `view` draws from a model of n_heads, in the order drawn: one per head with --head
// all (attention only), else for each method one map, or one per class for a class-specific
// method.
std::vector<MapSlot> map_slots(const EncoderView& view, int n_heads);

inline constexpr int kMaxPatches = 4096;  // 64×64: attention matrices stay under 64 MiB per head

// The layer index `layer` means in a model of n_layers (negative counts from the end);
// throws Error about roles::layer when out of range.
int resolve_layer(int layer, int n_layers);

// The layer a checked view draws (EncoderView::layer once resolved). Throws Error, a caller's
// bug, for a view whose layer was not resolved: one that still counts from the end.
int drawn_layer(const EncoderView& view);

// Throws Error about the role (layer, head, input size, method, class, LeGrad's first layer)
// that does not fit the model: a layer or head it does not have, an input size that is not a
// multiple of its patch size or that makes more than kMaxPatches patches (its own grid too,
// when img_size is 0), a class-specific method without a classifier, a class the classifier
// does not have, a LeGrad first layer past the last (−K on a model of fewer layers is all of
// them). `source` names the model in messages. Returns view.layer resolved against the model
// (resolve_layer): the index the view draws.
int check_view(const VitModel& model, const EncoderView& view, const std::string& source);

// The model input (width, height) for an image of (width, height): S×S, or with keep_aspect
// the shorter side S and the longer rounded to the nearest multiple of P. Throws Error
// about roles::keep_aspect when that would take more than kMaxPatches patches.
std::pair<int, int> input_size(int image_w, int image_h, int img_size, int patch_size, bool keep_aspect);

}  // namespace vitattn::pipeline
