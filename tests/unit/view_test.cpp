// pipeline/view.hpp: the view's layer is resolved once, by its check, and read as resolved after.
#include "pipeline/view.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/seeded_model.hpp"

namespace vitattn::pipeline {
namespace {

// The seeded model with its one block repeated: a model of `layers` layers.
VitModel model_of_layers(int layers) {
  VitModel m = make_seeded_model(SeededShape{32, 16, 8, 4}, 1);
  while (m.n_layers() < layers) m.blocks.push_back(m.blocks.front());
  return m;
}

TEST(View, CheckViewAnswersTheLayerIndexTheViewMeans) {
  const VitModel model = model_of_layers(4);
  EncoderView view;
  for (const auto& [asked, index] : {std::pair{-1, 3}, {-4, 0}, {-2, 2}, {0, 0}, {2, 2}}) {
    view.layer = asked;
    EXPECT_EQ(check_view(model, view, "the model"), index) << "layer " << asked;
  }
}

TEST(View, DrawnLayerIsTheResolvedLayerAndRefusesOneStillCountingFromTheEnd) {
  EncoderView view;
  view.layer = 2;
  EXPECT_EQ(drawn_layer(view), 2);
  view.layer = -1;
  EXPECT_THROW(drawn_layer(view), Error);
}

}  // namespace
}  // namespace vitattn::pipeline
