// The class option's words (pipeline/class_choice.hpp), as the image command, forward and
// serve take them: the tiers a label is looked up in, ambiguity, white space, a whole label
// with commas, and the errors' subject.
#include "pipeline/class_choice.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "pipeline/view.hpp"

namespace vitattn::pipeline {
namespace {

model::ClassLabels labels(std::vector<std::string> names) { return {std::move(names), "test"}; }

std::vector<int> indices(const std::vector<std::string>& values, const model::ClassLabels& l) {
  std::vector<int> out;
  for (const ChosenClass& c : resolve_classes(values, l, static_cast<int>(l.names.size()), "m")) out.push_back(c.index);
  return out;
}

// The Error resolve_classes throws for `values`: its subject and message.
Error refusal(const std::vector<std::string>& values, const model::ClassLabels& l, int n_classes = -1) {
  try {
    resolve_classes(values, l, n_classes < 0 ? static_cast<int>(l.names.size()) : n_classes, "m");
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << values.front();
  return Error("none");
}

// Hugging Face's id2label spelling of a few ImageNet classes: synonyms after commas.
const model::ClassLabels kHf = labels({"Cardigan, Cardigan Welsh corgi", "cardigan", "cougar, puma, catamount",
                                    "lion, king of beasts, Panthera leo", "crane", "crane"});

TEST(ClassChoice, AnExactLabelWinsOverOneInAnotherCase) {
  const model::ClassLabels l = labels({"Cardigan", "cardigan"});
  EXPECT_EQ(indices({"cardigan"}, l), std::vector<int>{1});
  EXPECT_EQ(indices({"Cardigan"}, l), std::vector<int>{0});
  EXPECT_EQ(indices({"cardigan,Cardigan"}, l), (std::vector<int>{1, 0}));  // two classes, not one twice
}

TEST(ClassChoice, ALabelInAnotherCaseMatchesWhenNoneIsExact) {
  const model::ClassLabels l = labels({"Tabby cat", "dog"});
  EXPECT_EQ(indices({"tabby CAT"}, l), std::vector<int>{0});
}

TEST(ClassChoice, TheLettersAsTypedComeBeforeAnyCase) {
  // "cardigan" is the sweater's label exactly; "Cardigan" is a synonym, in its exact case, of
  // the corgi, and the sweater's label only in another case: each is the class typed.
  EXPECT_EQ(indices({"cardigan"}, kHf), std::vector<int>{1});
  EXPECT_EQ(indices({"Cardigan"}, kHf), std::vector<int>{0});
  EXPECT_EQ(indices({"Cardigan Welsh corgi"}, kHf), std::vector<int>{0});
  EXPECT_EQ(indices({"CARDIGAN"}, labels({"cardigan", "Pembroke, corgi"})), std::vector<int>{0});
}

TEST(ClassChoice, ASynonymOfALabelNamesItsClass) {
  EXPECT_EQ(indices({"cougar"}, kHf), std::vector<int>{2});
  EXPECT_EQ(indices({"puma"}, kHf), std::vector<int>{2});
  EXPECT_EQ(indices({"PUMA"}, kHf), std::vector<int>{2});          // a synonym in any case
  EXPECT_EQ(indices({"king of beasts"}, kHf), std::vector<int>{3});  // a synonym with spaces
}

TEST(ClassChoice, ASynonymInItsExactCaseWinsOverOneInAnotherCase) {
  const model::ClassLabels l = labels({"Jaguar, panther", "jaguar car, Panther"});
  EXPECT_EQ(indices({"panther"}, l), std::vector<int>{0});
  EXPECT_EQ(indices({"Panther"}, l), std::vector<int>{1});
}

TEST(ClassChoice, WhiteSpaceAroundItemsIsIgnored) {
  EXPECT_EQ(indices({"cougar, lion"}, kHf), (std::vector<int>{2, 3}));
  EXPECT_EQ(indices({" 3 ,\t5 "}, kHf), (std::vector<int>{3, 5}));
  EXPECT_EQ(indices({"  puma  "}, kHf), std::vector<int>{2});
}

TEST(ClassChoice, AValueThatIsExactlyOneLabelWithCommasIsThatLabel) {
  EXPECT_EQ(indices({"cougar, puma, catamount"}, kHf), std::vector<int>{2});
  EXPECT_EQ(indices({"  lion, king of beasts, Panthera leo "}, kHf), std::vector<int>{3});
  // Not exactly a label: a list, whose items here name one class twice.
  const Error e = refusal({"cougar,puma, catamount"}, kHf);
  EXPECT_NE(std::string(e.what()).find("twice"), std::string::npos) << e.what();
}

TEST(ClassChoice, AnAmbiguousLabelListsEveryCandidateWithItsIndex) {
  const Error exact = refusal({"crane"}, kHf);
  EXPECT_NE(std::string(exact.what()).find("ambiguous"), std::string::npos) << exact.what();
  EXPECT_NE(std::string(exact.what()).find("\"crane\" (4), \"crane\" (5)"), std::string::npos) << exact.what();
  const Error any_case = refusal({"CARDIGAN"}, labels({"Cardigan", "cardigan", "sweater"}));
  EXPECT_NE(std::string(any_case.what()).find("\"Cardigan\" (0), \"cardigan\" (1)"), std::string::npos) << any_case.what();
  EXPECT_EQ(std::string(any_case.what()).find("sweater"), std::string::npos) << any_case.what();
  const Error synonym = refusal({"panther"}, labels({"jaguar, panther", "cougar, panther", "lion"}));
  EXPECT_NE(std::string(synonym.what()).find("\"jaguar, panther\" (0), \"cougar, panther\" (1)"), std::string::npos)
      << synonym.what();
}

TEST(ClassChoice, ErrorsNameTheItemAsTheClassRolesValue) {
  const Error unknown = refusal({"3, cougr"}, kHf);
  ASSERT_TRUE(unknown.subject());
  EXPECT_EQ(unknown.subject()->role, roles::class_choice);
  EXPECT_EQ(unknown.subject()->value, "cougr");
  EXPECT_NE(unknown.detail().find("\"cougar, puma, catamount\" (2)"), std::string::npos) << unknown.detail();
  const Error range = refusal({"6"}, kHf);
  EXPECT_EQ(range.subject()->value, "6");
  EXPECT_NE(range.detail().find("0…5"), std::string::npos) << range.detail();
  EXPECT_NE(std::string(refusal({"3,,5"}, kHf).what()).find("empty"), std::string::npos);
  EXPECT_NE(std::string(refusal({"puma", "2"}, kHf).what()).find("twice"), std::string::npos);
  EXPECT_NE(std::string(refusal({"cat"}, labels({}), 10).what()).find("no class names"), std::string::npos);
  EXPECT_NE(std::string(refusal({"0"}, labels({}), 0).what()).find("no classifier"), std::string::npos);
}

TEST(ClassChoice, IndicesNeedNoNames) {
  EXPECT_EQ(indices({"0,9"}, labels({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"})), (std::vector<int>{0, 9}));
  const std::vector<ChosenClass> c = resolve_classes({"7"}, labels({}), 10, "m");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].index, 7);
  EXPECT_EQ(c[0].label, "");
  EXPECT_EQ(class_name(c[0]), "7");
}

// The built-in ImageNet-1k names (0-based): "Cardigan" the corgi is 264, "cardigan" the
// sweater 474, their only two labels alike but for case.
TEST(ClassChoice, TheBuiltInImageNetNamesReachBothCardigans) {
  const model::ClassLabels imagenet{model::imagenet1k_classes(), "built in"};
  ASSERT_EQ(imagenet.names[264], "Cardigan");
  ASSERT_EQ(imagenet.names[474], "cardigan");
  EXPECT_EQ(indices({"cardigan"}, imagenet), std::vector<int>{474});
  EXPECT_EQ(indices({"cardigan,Cardigan"}, imagenet), (std::vector<int>{474, 264}));
  const Error e = refusal({"CARDIGAN"}, imagenet);
  EXPECT_NE(std::string(e.what()).find("\"Cardigan\" (264), \"cardigan\" (474)"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace vitattn::pipeline
