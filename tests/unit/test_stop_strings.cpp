// Stop strings are cut out of generated text and never sent, not even in part: text that could
// begin one is held back until later text decides.
#include <gtest/gtest.h>

#include "agentcompile/server/stop_strings.h"

using ac::server::StopStrings;

namespace {

TEST(StopStrings, HeldBackUntilDecidedAndNeverSent) {
  StopStrings s({"END", "\n\n"});
  EXPECT_EQ(s.push("Hello E"), "Hello ");  // "E" may begin "END"
  EXPECT_EQ(s.push("N"), "");
  EXPECT_EQ(s.push("x"), "ENx");            // it did not
  EXPECT_EQ(s.push(" one\n"), " one");
  EXPECT_EQ(s.push("\nrest"), "");           // "\n\n" met: nothing more
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.push("more"), "");
  EXPECT_EQ(s.flush(), "");
}

TEST(StopStrings, SplitAcrossPiecesAndEarliestWins) {
  StopStrings s({"world", "lo w"});
  std::string out;
  for (const char* piece : {"hel", "lo", " wor", "ld!"}) out += s.push(piece);
  EXPECT_EQ(out, "hel");
  EXPECT_TRUE(s.stopped());
}

TEST(StopStrings, FlushReleasesWhatWasHeldWithoutAMatch) {
  StopStrings s({"</s>"});
  EXPECT_EQ(s.push("a </"), "a ");
  EXPECT_EQ(s.flush(), "</");
  EXPECT_FALSE(s.stopped());
}

TEST(StopStrings, MultiByteCharactersStayWhole) {
  StopStrings s({"\xC3\xA9t\xC3\xA9"});  // "été"
  EXPECT_EQ(s.push("caf\xC3\xA9"), "caf");  // "é" may begin it
  EXPECT_EQ(s.push("!"), "\xC3\xA9!");
  StopStrings none({});
  EXPECT_EQ(none.push("abc"), "abc");
}

}  // namespace
