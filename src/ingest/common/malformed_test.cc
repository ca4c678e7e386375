#include "ingest/common/malformed.h"

#include <gtest/gtest.h>

namespace gpuscope::ingest {
namespace {

TEST(MalformedLines, CountsEveryLineQuotesTheFirstFewSanitised) {
  monitor::Recording rec;
  MalformedLines bad(&rec, "log.csv");
  for (uint64_t line = 1; line <= 5; ++line) bad.Count(line, "bad\x01value");
  EXPECT_EQ(rec.malformed_lines, 5u);
  ASSERT_EQ(rec.malformed_examples.size(), MalformedLines::kExamples);
  EXPECT_EQ(rec.malformed_examples[0].rfind("log.csv:1: bad", 0), 0u) << rec.malformed_examples[0];
  EXPECT_EQ(rec.malformed_examples[0].find('\x01'), std::string::npos);  // no control byte
}

TEST(MalformedLines, ACutLastLineIsTakenBack) {
  monitor::Recording rec;
  MalformedLines bad(&rec, "log.csv");
  bad.Count(1, "bad");
  MalformedLines::Mark mark = bad.Checkpoint();
  EXPECT_FALSE(bad.TakeBackCut(mark));  // nothing counted since: no cut to note
  bad.Count(2, "cut short");
  EXPECT_TRUE(bad.TakeBackCut(mark));
  EXPECT_EQ(rec.malformed_lines, 1u);
  ASSERT_EQ(rec.malformed_examples.size(), 1u);
  EXPECT_EQ(rec.malformed_examples[0], "log.csv:1: bad");
}

}  // namespace
}  // namespace gpuscope::ingest
