// heads.csv's text (pipeline/heads_part.hpp): the batch header, one row per layer and head in
// that order, the image quoted by RFC 4180, 9 significant digits. The numbers themselves are
// tests/e2e/test_heads_clean.py's, against numpy and torch.
#include "pipeline/heads_part.hpp"

#include <gtest/gtest.h>

namespace vitattn {
namespace {

TEST(HeadsCsv, Rfc4180RowsUnderTheBatchHeaderLayersThenHeads) {
  TokenDiagnostics d;
  d.heads = {{{1.0 / 3, 24.5, 0.25, 0.0}, {2.0, 8.0, 0.5, 0.125}},
             {{0.5, 16.0, 0.0625, 2.0 / 3}, {1e-7, 0.0, 1.0, 1.0}}};  // [layer][head]: entropy, distance, mask, flagged
  EXPECT_EQ(pipeline::heads_csv("a,b \"c\".png", d),
            "image,layer,head,entropy,distance_px,mask_share,flagged_share\n"
            "\"a,b \"\"c\"\".png\",0,0,0.333333333,24.5,0.25,0\n"
            "\"a,b \"\"c\"\".png\",0,1,2,8,0.5,0.125\n"
            "\"a,b \"\"c\"\".png\",1,0,0.5,16,0.0625,0.666666667\n"
            "\"a,b \"\"c\"\".png\",1,1,1e-07,0,1,1\n");
  EXPECT_EQ(pipeline::heads_csv("plain.png", TokenDiagnostics{}),
            "image,layer,head,entropy,distance_px,mask_share,flagged_share\n");
}

}  // namespace
}  // namespace vitattn
