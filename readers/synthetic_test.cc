#include "readers/synthetic.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "readers/format.h"
#include "readers/test_util.h"

namespace dlio {
namespace {

TEST(Synthetic, PlaceholderHoldsTheFileIndexAndReadsDoNoIo) {
  testing::TempDir dir;
  FormatOptions o;
  o.samples_per_file = 5;
  o.sample_dims = {64, 64};
  auto f = MakeFormat("synthetic", o);
  ASSERT_TRUE(f.ok()) << f.status();
  IoStats gen;
  const std::string path = dir.File("img_07_of_12.synthetic");
  ASSERT_TRUE((*f)->Generate(path + ".tmp-1", 1, gen).ok());  // a temporary name, as the agent writes
  std::ifstream in(path + ".tmp-1");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "7") << "DLIO writes f\"{i}\"";
  EXPECT_EQ(gen.Snapshot().bytes, 1u);
  EXPECT_EQ(gen.Snapshot().samples, 5u);
  auto r = (*f)->NewSampleReader();
  IoStats st;
  for (uint32_t i = 0; i < 5; ++i) {
    auto n = r->ReadSample(dir.File("never/opened.synthetic"), i, st);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 0u);
  }
  const IoSnapshot s = st.Snapshot();
  EXPECT_EQ(s.bytes, 0u);
  EXPECT_EQ(s.ops, 0u);
  EXPECT_EQ(s.files, 0u);
  EXPECT_EQ(s.samples, 5u);
}

}  // namespace
}  // namespace dlio
