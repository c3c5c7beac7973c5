// Small text helpers (agentcompile/core/text.h): the "did you mean" of a mistyped command.
#include <gtest/gtest.h>

#include "agentcompile/core/text.h"

using namespace ac;

TEST(Text, ClosestMatchSuggestsOnlyNearNames) {
  const std::vector<std::string> cmds = {"inspect", "synth-model", "logits", "generate", "kernels", "tokenize",
                                         "detokenize", "advise", "compile", "bench"};
  EXPECT_EQ(closest_match("genrate", cmds), "generate");      // a deletion
  EXPECT_EQ(closest_match("comiple", cmds), "compile");       // a transposition counts once
  EXPECT_EQ(closest_match("tokenise", cmds), "tokenize");     // a substitution
  EXPECT_EQ(closest_match("detokenizee", cmds), "detokenize");
  EXPECT_EQ(closest_match("benhc", cmds), "bench");
  EXPECT_EQ(closest_match("frobnicate", cmds), "");           // nothing close
  EXPECT_EQ(closest_match("run", cmds), "");
  EXPECT_EQ(closest_match("", cmds), "");
  EXPECT_EQ(closest_match("e2ee", {"e2e", "module", "kernels", "report"}), "e2e");
  EXPECT_EQ(closest_match("ab", {"e2e"}), "");                 // 2 edits of a 3-letter name is another word
  EXPECT_EQ(closest_match(std::string(1000, 'a'), cmds), "");
}
