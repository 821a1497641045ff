// The pure logic of the s3 read-ahead (storage/s3/read_ahead.h): the window's order and bound, the byte budget, the
// thread's key source scope. The GETs themselves are tested on the suite's gateway (tests/s3_test.cc).
#include "storage/s3/read_ahead.h"

#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace dlio {
namespace {

TEST(ReadAheadWindow, KeysLeaveInIssueOrderWhateverOrderTheyFinishIn) {
  const std::vector<std::string> keys = {"a", "b", "c", "d", "e", "f"};
  ReadAheadWindow w(4);
  std::vector<int> slots;
  for (int i = 0; i < 4; ++i) slots.push_back(w.Push(&keys[static_cast<size_t>(i)], 4));
  EXPECT_EQ(w.Push(&keys[4], 4), -1) << "a fifth key in a window of 4";
  EXPECT_EQ(w.size(), 4u);
  // The last issued finishes first: the front is still the first issued, not done.
  w.MarkDone(slots[3]);
  w.MarkDone(slots[1]);
  EXPECT_EQ(*w.key(w.front()), "a");
  EXPECT_FALSE(w.done(w.front()));
  w.MarkDone(slots[0]);
  EXPECT_TRUE(w.done(w.front()));
  std::vector<std::string> out;
  out.push_back(*w.key(w.PopFront()));
  // A freed slot takes the next key at the back, behind the three still waiting.
  EXPECT_GE(w.Push(&keys[4], 4), 0);
  while (w.size() > 0) out.push_back(*w.key(w.PopFront()));
  EXPECT_EQ(out, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
}

TEST(ReadAheadWindow, FindsAKeyFromTheFrontAndHonoursASmallerLimit) {
  const std::vector<std::string> keys = {"x/1", "x/2", "x/1", "x/3"};
  ReadAheadWindow w(8);
  for (const std::string& k : keys) ASSERT_GE(w.Push(&k, 8), 0);
  EXPECT_EQ(w.Find("x/1"), 0);  // the first of two
  EXPECT_EQ(w.Find("x/3"), 3);
  EXPECT_EQ(w.Find("x/4"), -1);
  w.PopFront();
  EXPECT_EQ(w.Find("x/1"), 1);
  EXPECT_EQ(w.Push(&keys[0], 3), -1) << "3 in the window, limit 3";
  // The ring wraps: many pushes and pops keep the order.
  ReadAheadWindow r(3);
  std::vector<std::string> seq;
  for (int i = 0; i < 20; ++i) seq.push_back("k" + std::to_string(i));
  size_t pushed = 0;
  std::vector<std::string> got;
  while (got.size() < seq.size()) {
    while (pushed < seq.size() && r.Push(&seq[pushed], 3) >= 0) ++pushed;
    got.push_back(*r.key(r.PopFront()));
  }
  EXPECT_EQ(got, seq);
}

TEST(ReadAheadLimit, OneUntilASizeIsKnownThenWhatTheByteBudgetHolds) {
  EXPECT_EQ(ReadAheadLimit(8, 0), 1u);
  EXPECT_EQ(ReadAheadLimit(8, 100 << 10), 8u);
  EXPECT_EQ(ReadAheadLimit(64, 2 << 20), 32u);                 // 64 MiB / 2 MiB
  EXPECT_EQ(ReadAheadLimit(8, 140'000'000), 1u);               // unet3d: one at a time, as without read-ahead
  EXPECT_EQ(ReadAheadLimit(8, kReadAheadBytes / 3), 3u);
  EXPECT_EQ(ReadAheadLimit(0, 1), 1u);
}

struct FixedSource final : S3KeySource {
  const std::string* Next() override { return nullptr; }
};

TEST(S3KeySourceScope, InstallsTheSourceForThisThreadOnly) {
  EXPECT_EQ(CurrentS3KeySource(), nullptr);
  FixedSource src;
  {
    S3KeySourceScope scope(&src);
    EXPECT_EQ(CurrentS3KeySource(), &src);
    S3KeySource* other = &src;
    std::thread([&] { other = CurrentS3KeySource(); }).join();
    EXPECT_EQ(other, nullptr);
  }
  EXPECT_EQ(CurrentS3KeySource(), nullptr);
}

}  // namespace
}  // namespace dlio
