// The map methods' table (pipeline/map_methods.hpp): what it answers, checked against names
// spelt out here by hand, and the rules between its columns that the rest of the program
// relies on (a class-specific method has a relevance map and needs a classifier; a name is
// one method's).
#include "pipeline/map_methods.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.hpp"

namespace vitattn::pipeline {
namespace {

TEST(MapMethods, NamesInTheOrderMethodAllDrawsThem) {
  std::vector<std::string> names;
  for (MapMethod m : every_method()) names.push_back(method_name(m));
  EXPECT_EQ(names, (std::vector<std::string>{"attention", "rollout", "chefer", "grad-rollout", "legrad", "gradcam",
                                               "lrp"}));
  EXPECT_EQ(method_names(every_method(), " or "), "attention, rollout, chefer, grad-rollout, legrad, gradcam or lrp");
  EXPECT_EQ(method_names(class_specific_methods(), ", "), "chefer, grad-rollout, legrad, gradcam, lrp");
}

TEST(MapMethods, ANameIsParsedExactlyAndAnAliasOnlyByTheCommandLinesList) {
  for (MapMethod m : every_method()) EXPECT_EQ(method_named(method_name(m)), m);
  EXPECT_EQ(method_named("grad-rollout"), MapMethod::grad_rollout);
  EXPECT_FALSE(method_named("grad_rollout"));  // an alias: the command line maps it to its name first
  EXPECT_FALSE(method_named("Chefer"));
  EXPECT_FALSE(method_named("all"));
  EXPECT_FALSE(method_named(""));
  const std::vector<std::pair<std::string, std::string>> aliases = method_aliases();
  const std::vector<std::pair<std::string, std::string>> expected{{"attn", "attention"},
                                                                  {"grad_rollout", "grad-rollout"},
                                                                  {"gradrollout", "grad-rollout"},
                                                                  {"grad-cam", "gradcam"},
                                                                  {"grad_cam", "gradcam"}};
  EXPECT_EQ(aliases, expected);
}

TEST(MapMethods, EveryNameAndAliasNamesOneMethod) {
  std::set<std::string> seen;
  for (const MapMethodRow& r : map_method_rows()) {
    EXPECT_TRUE(seen.insert(r.name).second) << r.name;
    for (const char* a : r.aliases) EXPECT_TRUE(seen.insert(a).second) << a;
  }
}

TEST(MapMethods, AClassSpecificMethodHasARelevanceMapAndNeedsAClassifier) {
  for (const MapMethodRow& r : map_method_rows()) {
    EXPECT_EQ(r.class_specific, r.relevance != nullptr) << r.name;
    EXPECT_EQ(r.class_specific, r.needs_classifier) << r.name;
    EXPECT_EQ(r.class_specific, r.report_order >= 0) << r.name;
  }
  EXPECT_FALSE(class_specific(MapMethod::attention));
  EXPECT_FALSE(class_specific(MapMethod::rollout));
  EXPECT_TRUE(class_specific(MapMethod::legrad));
  EXPECT_TRUE(relevance_map(MapMethod::chefer) == &RelevanceMaps::chefer);
  EXPECT_TRUE(relevance_map(MapMethod::grad_rollout) == &RelevanceMaps::grad_rollout);
  EXPECT_TRUE(relevance_map(MapMethod::legrad) == &RelevanceMaps::legrad);
  EXPECT_TRUE(relevance_map(MapMethod::gradcam) == &RelevanceMaps::gradcam);
  EXPECT_TRUE(relevance_map(MapMethod::lrp) == &RelevanceMaps::lrp);
  EXPECT_THROW(relevance_map(MapMethod::rollout), Error);
}

TEST(MapMethods, TheReportHoldsTheClassSpecificMapsInItsOrder) {
  EXPECT_EQ(report_methods(),
            (std::vector<MapMethod>{MapMethod::chefer, MapMethod::grad_rollout, MapMethod::legrad, MapMethod::gradcam,
                                    MapMethod::lrp}));
  EXPECT_EQ(report_start_method(MapMethod::legrad), "legrad");
  EXPECT_EQ(report_start_method(MapMethod::rollout), "attention");  // rollout: the page's flag over attention
  EXPECT_EQ(report_start_method(MapMethod::attention), "attention");
}

}  // namespace
}  // namespace vitattn::pipeline
