// The connection buffer (daemon/buffer.h): bytes survive growth, compaction
// and shrinking; memory is given back when a connection only waits.
#include "daemon/buffer.h"

#include <gtest/gtest.h>

#include <string>

namespace gearbox {
namespace {

TEST(BufferTest, AppendConsumeAndGrowKeepTheBytesInOrder) {
  Buffer b;
  b.Append("");  // an empty append on an empty buffer is fine
  EXPECT_TRUE(b.empty());
  std::string want;
  for (int i = 0; i < 2000; ++i) {
    const std::string piece = "chunk-" + std::to_string(i) + ";";
    b.Append(piece);
    want += piece;
    if (i % 7 == 0) {
      b.Consume(3);
      want.erase(0, 3);
    }
  }
  EXPECT_EQ(b.view(), want);
}

TEST(BufferTest, ShrinkKeepsTheBytesAndDropsTheSpareRoom) {
  Buffer b;
  b.Reserve(16384);  // what a read reserves
  b.Append("GET / HTTP/1.1\r\nX-Slow: ");
  b.Consume(4);
  EXPECT_GE(b.writable(), 16000u);
  b.Shrink();
  EXPECT_EQ(b.view(), "/ HTTP/1.1\r\nX-Slow: ");
  EXPECT_LE(b.size() + b.writable(), 4096u) << "capacity not cut down";
  b.Append("more");  // still usable
  EXPECT_EQ(b.view(), "/ HTTP/1.1\r\nX-Slow: more");
}

TEST(BufferTest, ShrinkOfABigBufferKeepsEveryByte) {
  Buffer b;
  const std::string big(10000, 'x');
  b.Append(big);
  b.Reserve(65536);
  b.Shrink();
  EXPECT_EQ(b.view(), big);
  EXPECT_EQ(b.writable(), 0u);
}

TEST(BufferTest, ShrinkOfAnEmptyBufferReleasesIt) {
  Buffer b;
  b.Append("abc");
  b.Consume(3);
  b.Shrink();
  EXPECT_EQ(b.writable(), 0u);
  EXPECT_TRUE(b.empty());
}

}  // namespace
}  // namespace gearbox
