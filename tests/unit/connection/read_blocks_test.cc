// A worker's spare read blocks (daemon/connection/read_blocks.h): a
// connection gone idle gives its read buffer back, the next read on the same
// worker takes it instead of allocating; bounded in count and size.
#include "daemon/connection/read_blocks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/router.h"
#include "tests/support/machine_test.h"

namespace gearbox {
namespace {

constexpr size_t kChunk = 16384;  // what a blocking worker reads into

class ReadBlocksTest : public testing::MachineTest {
 protected:
  ReadBlocksTest() {
    Build({DefaultRoute("/hello", "text")});
    env_.read_blocks = &blocks_;
  }
  // Reads `bytes` as a blocking worker does, into ReadSpace(); returns where.
  char* Read(Connection& c, std::string_view bytes) {
    char* tail = c.ReadSpace(kChunk);
    memcpy(tail, bytes.data(), bytes.size());
    c.Commit(bytes.size(), now_);
    return tail;
  }
  // A request read and answered: the connection is idle again.
  char* Served(Connection& c) {
    char* where = Read(c, "GET /hello HTTP/1.1\r\nHost: a\r\n\r\n");
    const std::string out(c.pending_out());
    EXPECT_EQ(out.rfind("HTTP/1.1 200", 0), 0u) << out;
    c.Sent(out.size(), now_);
    EXPECT_EQ(c.phase(), Phase::kIdle);
    return where;
  }

  ReadBlocks blocks_;
};

TEST_F(ReadBlocksTest, AnIdleConnectionsBlockServesTheNextRead) {
  auto first = Open();
  char* block = Served(*first);
  EXPECT_EQ(blocks_.kept(), 0u);
  first->Trim();  // gone back to wait for its next request
  EXPECT_EQ(blocks_.kept(), 1u);
  auto second = Open();
  EXPECT_EQ(Served(*second), block);  // the same memory, not a new one
  EXPECT_EQ(blocks_.kept(), 0u);
  first->Trim();  // it has nothing now: nothing to give
  EXPECT_EQ(blocks_.kept(), 0u);
}

TEST_F(ReadBlocksTest, AConnectionHoldingBytesKeepsThem) {
  auto c = Open();
  Read(*c, "GET /hello HTTP/1.1\r\nHo");  // half a head
  c->Trim();
  EXPECT_EQ(blocks_.kept(), 0u);
  Read(*c, "st: a\r\n\r\n");
  EXPECT_EQ(std::string(c->pending_out()).rfind("HTTP/1.1 200", 0), 0u);
}

TEST_F(ReadBlocksTest, KeepsAtMostABoundedNumber) {
  std::unique_ptr<Connection> all[kKeptReadBlocks + 2];
  for (auto& c : all) {
    c = Open();
    Served(*c);
  }
  for (auto& c : all) c->Trim();
  EXPECT_EQ(blocks_.kept(), kKeptReadBlocks);
}

TEST_F(ReadBlocksTest, ALargeBlockIsFreedNotKept) {
  ReadBlocks blocks;
  blocks.Give({static_cast<char*>(malloc(kKeptReadBlockBytes + 1)),
               kKeptReadBlockBytes + 1});
  EXPECT_EQ(blocks.kept(), 0u);
  blocks.Give({static_cast<char*>(malloc(kChunk)), kChunk});
  EXPECT_EQ(blocks.kept(), 1u);
  const Buffer::Block b = blocks.Take();
  EXPECT_EQ(b.capacity, kChunk);
  EXPECT_EQ(blocks.Take().data, nullptr);  // none left: allocate as before
  free(b.data);
}

TEST_F(ReadBlocksTest, WithoutSparesTheBufferIsFreed) {
  env_.read_blocks = nullptr;
  auto c = Open();
  Served(*c);
  c->Trim();
  EXPECT_EQ(blocks_.kept(), 0u);
  Served(*c);  // and a read allocates again
}

}  // namespace
}  // namespace gearbox
