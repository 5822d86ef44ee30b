// common/atomic_file: a file is written whole or not at all, and nothing is left behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
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

// A name of 250 bytes is a file name Linux takes (NAME_MAX 255), but its name + ".tmp-XXXXXX" is
// not: the temporary then takes a shorter name in the same directory, and is renamed over it.
TEST(AtomicFile, ANameNearNameMaxIsWritten) {
  test::TempDir dir;
  for (size_t length : {244, 245, 250, 255}) {
    const std::string name = std::string(length - 4, 'n') + ".npy";
    const std::string path = dir.path + "/" + name;
    write_text(path, "old");
    write_text(path, "new " + std::to_string(length));
    EXPECT_EQ(test::read_file(path), "new " + std::to_string(length));
    EXPECT_EQ(entries(dir.path), std::vector<std::string>{name}) << "no temporary file is left";
    EXPECT_THROW(write_atomically(path, [](std::FILE*) { throw std::runtime_error("the writer gave up"); }),
                 std::runtime_error);
    EXPECT_EQ(test::read_file(path), "new " + std::to_string(length)) << "a failure leaves the file as it was";
    EXPECT_EQ(entries(dir.path), std::vector<std::string>{name}) << "and no temporary";
    fs::remove(path);
  }
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

// Write-then-rename is for regular files: a device stays a device, a FIFO's reader gets the
// bytes, a link to a file stays a link.
TEST(AtomicFile, ADeviceIsWrittenNotReplaced) {
  write_text("/dev/null", "into the device");
  struct stat st {};
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null must stay a character device";
}

TEST(AtomicFile, AFifosReaderGetsTheBytes) {
  test::TempDir dir;
  const std::string fifo = dir.path + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = test::read_file(fifo); });
  write_text(fifo, "through the pipe");
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  EXPECT_EQ(entries(dir.path), std::vector<std::string>{"fifo"}) << "no temporary, the FIFO kept";
}

TEST(AtomicFile, ALinkToAFileStaysALink) {
  test::TempDir dir;
  const std::string target = dir.path + "/target", link = dir.path + "/link";
  write_text(target, "old");
  ASSERT_EQ(::symlink("target", link.c_str()), 0);
  write_text(link, "new");
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(test::read_file(target), "new");
  EXPECT_EQ(entries(dir.path), (std::vector<std::string>{"link", "target"}));
}

// A signal that ends the process while a file is being written removes the temporary file, and
// the process still ends by that signal. Run in a child, which raises it half-way through.
int status_of_child_killed_mid_write(const std::string& path, int sig) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    remove_temporaries_on_signals();
    write_atomically(path, [&](std::FILE* f) {
      std::fputs("half of it", f);
      std::fflush(f);
      ::raise(sig);
      std::fputs("the rest", f);
    });
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(AtomicFile, SignalsRemoveTheTemporary) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    test::TempDir dir;
    const int status = status_of_child_killed_mid_write(dir.path + "/out.npy", sig);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig << ", status " << status;
    EXPECT_TRUE(entries(dir.path).empty()) << "signal " << sig << " left " << entries(dir.path).size() << " files";
  }
}

// Inside SignalsDeferred a signal waits, and takes effect (the temporaries removed) when it ends.
TEST(AtomicFile, DeferredSignalsWaitForTheEndOfTheSteps) {
  test::TempDir dir;
  const std::string tmp = dir.path + "/stage", done = dir.path + "/done";
  const pid_t pid = ::fork();
  if (pid == 0) {
    remove_temporaries_on_signals();
    ::mkdir(tmp.c_str(), 0700);
    const TemporaryName live(tmp, true);
    {
      const SignalsDeferred whole;
      ::raise(SIGTERM);
      std::fclose(std::fopen(done.c_str(), "w"));  // reached: the signal waited
    }
    ::_exit(0);  // not reached
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_EQ(entries(dir.path), std::vector<std::string>{"done"}) << "the steps ran, then the directory went";
}

TEST(MachineMemory, IsThePhysicalPages) {
  const uint64_t pages = uint64_t(::sysconf(_SC_PHYS_PAGES)), page = uint64_t(::sysconf(_SC_PAGE_SIZE));
  EXPECT_EQ(machine_memory_bytes(), pages * page);
  EXPECT_GT(machine_memory_bytes(), uint64_t(1) << 28);
}

}  // namespace
}  // namespace ordo
