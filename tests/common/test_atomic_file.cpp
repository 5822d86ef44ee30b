// common/atomic_file: a file is written whole or not at all, and nothing is left behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <ordo/errors.h>

#include "common/atomic_file.h"
#include "common/memory.h"
#include "test_util.h"

namespace ordo {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void write_text(const std::string& path, const std::string& text) {
  write_atomically(path, [&](std::FILE* f) { std::fwrite(text.data(), 1, text.size(), f); });
}

TEST(AtomicFile, WritesTheBytesWithAPlainFilesMode) {
  test::TempDir dir;
  const std::string path = dir.path + "/out.txt";
  write_text(path, "first");
  write_text(path, "second, longer");
  EXPECT_EQ(test::read_file(path), "second, longer");
  EXPECT_EQ(entries(dir.path), std::vector<std::string>{"out.txt"}) << "no temporary file is left";
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST(AtomicFile, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  test::TempDir dir;
  const std::string path = dir.path + "/out.txt";
  write_text(path, "kept");
  EXPECT_THROW(write_atomically(path,
                                [](std::FILE* f) {
                                  std::fputs("half", f);
                                  throw std::runtime_error("the writer gave up");
                                }),
               std::runtime_error);
  EXPECT_EQ(test::read_file(path), "kept");
  EXPECT_EQ(entries(dir.path), std::vector<std::string>{"out.txt"});
}

TEST(AtomicFile, AMissingDirectoryIsAnInputErrorNamingThePath) {
  test::TempDir dir;
  const std::string path = dir.path + "/no-such-dir/out.txt";
  try {
    write_text(path, "x");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot write: No such file or directory");
  }
  EXPECT_TRUE(entries(dir.path).empty());
}

// Links left where older writers put their temporary files are neither followed nor removed.
TEST(AtomicFile, StaleTemporaryNamesAreNotFollowed) {
  test::TempDir dir;
  const std::string path = dir.path + "/out.txt", victim = dir.path + "/victim";
  write_text(victim, "untouched");
  for (const std::string& stale : {path + ".partial", path + ".tmp-XXXXXX"})
    ASSERT_EQ(::symlink(victim.c_str(), stale.c_str()), 0) << stale;
  write_text(path, "new");
  EXPECT_EQ(test::read_file(path), "new");
  EXPECT_EQ(test::read_file(victim), "untouched");
  EXPECT_EQ(entries(dir.path),
            (std::vector<std::string>{"out.txt", "out.txt.partial", "out.txt.tmp-XXXXXX", "victim"}));
}

TEST(MachineMemory, IsThePhysicalPages) {
  const uint64_t pages = uint64_t(::sysconf(_SC_PHYS_PAGES)), page = uint64_t(::sysconf(_SC_PAGE_SIZE));
  EXPECT_EQ(machine_memory_bytes(), pages * page);
  EXPECT_GT(machine_memory_bytes(), uint64_t(1) << 28);
}

}  // namespace
}  // namespace ordo
