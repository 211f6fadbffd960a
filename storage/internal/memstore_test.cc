#include "storage/internal/memstore.h"

#include <atomic>
#include <thread>

#include "gtest/gtest.h"
#include "storage/cell.h"
#include "storage/internal/merging_iterator.h"

namespace basalt {
namespace {

TEST(MemStore, OrderAndReadPoint) {
  auto mem = std::make_shared<MemStore>();
  mem->Add(MakeFlatKey("b", "q", 1, CellType::kPut), 1, "b1");
  mem->Add(MakeFlatKey("a", "q", 1, CellType::kPut), 2, "a1");
  mem->Add(MakeFlatKey("a", "q", 1, CellType::kPut), 3, "a1-later");
  mem->Add(MakeFlatKey("a", "q", 2, CellType::kPut), 4, "a2");
  auto it = MemStore::NewIterator(mem, 10);
  std::vector<std::string> got;
  for (it->SeekToFirst(); it->Valid(); it->Next()) got.emplace_back(it->value());
  EXPECT_EQ(got, (std::vector<std::string>{"a2", "a1-later", "a1", "b1"}));
  // Read point 2 hides seq 3 and 4.
  auto old = MemStore::NewIterator(mem, 2);
  got.clear();
  for (old->SeekToFirst(); old->Valid(); old->Next()) got.emplace_back(old->value());
  EXPECT_EQ(got, (std::vector<std::string>{"a1", "b1"}));
  // The merging iterator keeps only the newest edit of a cell.
  IteratorList v;
  v.push_back(MemStore::NewIterator(mem, 10));
  auto merged = NewMergingIterator(std::move(v));
  got.clear();
  for (merged->Seek(FirstKeyOfRow("a")); merged->Valid(); merged->Next()) got.emplace_back(merged->value());
  EXPECT_EQ(got, (std::vector<std::string>{"a2", "a1-later", "b1"}));
}

TEST(MemStore, ReadersDuringWrites) {
  auto mem = std::make_shared<MemStore>();
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int i = 0; i < 20000; ++i) {
      char row[16];
      snprintf(row, sizeof row, "r%06d", (i * 7919) % 20000);
      mem->Add(MakeFlatKey(row, "q", 1, CellType::kPut), i + 1, "v");
    }
    done = true;
  });
  while (!done) {
    auto it = MemStore::NewIterator(mem, UINT64_MAX);
    std::string prev;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (!prev.empty()) {
        ASSERT_LT(CompareFlatKeys(prev, it->key()), 0);
      }
      prev.assign(it->key());
    }
  }
  writer.join();
  EXPECT_EQ(mem->num_entries(), 20000u);
}

TEST(MergingIterator, NewerChildWinsSameKey) {
  auto newer = std::make_shared<MemStore>();
  auto older = std::make_shared<MemStore>();
  older->Add(MakeFlatKey("r", "q", 5, CellType::kPut), 1, "old");
  older->Add(MakeFlatKey("r", "z", 5, CellType::kPut), 1, "z");
  newer->Add(MakeFlatKey("r", "q", 5, CellType::kPut), 2, "new");
  IteratorList v;
  v.push_back(MemStore::NewIterator(newer, 10));
  v.push_back(MemStore::NewIterator(older, 10));
  auto it = NewMergingIterator(std::move(v));
  std::vector<std::string> got;
  for (it->SeekToFirst(); it->Valid(); it->Next()) got.emplace_back(it->value());
  EXPECT_EQ(got, (std::vector<std::string>{"new", "z"}));
}

}  // namespace
}  // namespace basalt
