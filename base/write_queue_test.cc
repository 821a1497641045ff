#include "base/write_queue.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dlio {
namespace {

using Q = WriteQueue<std::string>;

TEST(WriteQueue, OneWriteInFlightTheNextStartsWhenItIsDone) {
  std::vector<std::string> started;
  Q q(8, [&](const std::string* m) { started.push_back(*m); });
  EXPECT_EQ(q.Push("a"), Q::Pushed::kStarted);
  EXPECT_EQ(q.Push("b"), Q::Pushed::kQueued);
  EXPECT_EQ(q.Push("c"), Q::Pushed::kQueued);
  EXPECT_EQ(started, std::vector<std::string>({"a"}));
  EXPECT_FALSE(q.Done(true));
  EXPECT_EQ(started, std::vector<std::string>({"a", "b"}));
  EXPECT_FALSE(q.Done(true));
  EXPECT_FALSE(q.Done(true));
  EXPECT_EQ(started, std::vector<std::string>({"a", "b", "c"}));
  EXPECT_EQ(q.Push("d"), Q::Pushed::kStarted);  // idle again: the next push starts at once
}

TEST(WriteQueue, CloseSaysWhenTheStreamMayFinish) {
  int starts = 0;
  Q idle(8, [&](const std::string*) { ++starts; });
  EXPECT_TRUE(idle.Close());                           // nothing in flight: finish now
  EXPECT_EQ(idle.Push("late"), Q::Pushed::kClosed);    // and nothing more is written
  Q busy(8, [&](const std::string*) { ++starts; });
  busy.Push("a");
  busy.Push("b");
  EXPECT_FALSE(busy.Close());                          // "a" is in flight
  EXPECT_TRUE(busy.Done(true));                        // its completion ends it; "b" is dropped
  EXPECT_EQ(starts, 1);
}

TEST(WriteQueue, ADrainingCloseWritesWhatIsQueuedFirst) {
  std::vector<std::string> started;
  Q q(8, [&](const std::string* m) { started.push_back(*m); });
  q.Push("a");
  q.Push("final");
  EXPECT_FALSE(q.Close(/*drain=*/true));
  EXPECT_EQ(q.Push("late"), Q::Pushed::kClosed);
  EXPECT_FALSE(q.Done(true));                          // "final" is started
  EXPECT_TRUE(q.Done(true));                           // and its completion ends the stream
  EXPECT_EQ(started, std::vector<std::string>({"a", "final"}));
}

TEST(WriteQueue, AFailedWriteBreaksTheQueueAndAFullOneRefuses) {
  int starts = 0;
  Q q(2, [&](const std::string*) { ++starts; });
  q.Push("a");
  q.Push("b");
  EXPECT_EQ(q.Push("c"), Q::Pushed::kFull);
  EXPECT_FALSE(q.Done(false));                         // broken, but not closed: the reader ends the stream
  EXPECT_EQ(q.Push("d"), Q::Pushed::kClosed);
  EXPECT_TRUE(q.Close());
  EXPECT_EQ(starts, 1);
}

}  // namespace
}  // namespace dlio
