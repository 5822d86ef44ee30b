// Reliability of the command line: long and broken input, closed pipes, full disks, huge configs.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <ordo/errors.h>
#include <ordo/ordo.h>

#include "cli/cli_util.h"
#include "paths.h"
#include "test_util.h"

namespace ordo {
namespace {

// Built with AddressSanitizer or ThreadSanitizer (their shadow memory and threads do not fit
// under the resource limits some tests set).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

using namespace test::cli;

TEST(Input, TenMegabyteLineFailsCleanlyOrIsCut) {
  test::TempDir dir;
  const std::string file = dir.path + "/long.txt";
  {
    std::ofstream out(file);
    for (int i = 0; i < 10 * 1024 * 1024 / 23; ++i) out << "the cat sat on the mat ";
    out << "\nshort line\n";
  }
  const auto r = run_ordo("encode" + kModel + "--input " + file);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(file + ": line 1: text is"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-tokens 8192"), std::string::npos) << r.err;
  const auto cut = run_ordo("encode --json --max-tokens 100 --truncate" + kModel + "--input " + file);
  ASSERT_EQ(cut.status, 0) << cut.err;
  std::istringstream lines(cut.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(nlohmann::json::parse(first)["ids"].size(), 100u);
  EXPECT_EQ(nlohmann::json::parse(second)["text"], "short line");
}

TEST(Input, ClosedPipeEndsQuietly) {
  std::string many;
  for (int i = 0; i < 2000; ++i) many += "the cat sat on the mat number " + std::to_string(i) + "\n";
  test::TempDir dir;
  std::ofstream(dir.path + "/in.txt") << many;
  // bash reports each stage's status; ordo's output far exceeds the pipe buffer, so it meets EPIPE.
  const std::string cmd =
      "bash -c " + quote(std::string(ORDO_BINARY) + " encode" + kModel + "--json --input " + dir.path + "/in.txt 2>" +
                         dir.path + "/err | head -c 100 >/dev/null; echo ${PIPESTATUS[0]}");
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[64] = {0};
  ASSERT_NE(std::fgets(buf, sizeof buf, p), nullptr);
  ::pclose(p);
  const int status = std::atoi(buf);
  EXPECT_TRUE(status == 141 || status == 0) << "status " << status << ": SIGPIPE (128 + 13) or a clean exit";
  std::ifstream err(dir.path + "/err");
  const std::string err_text((std::istreambuf_iterator<char>(err)), {});
  EXPECT_EQ(err_text, "") << "a reader that went away is not an error";
}

// Texts of 0 to 40 words, from a fixed-seed generator: more lines than one window of `encode`.
std::vector<std::string> many_texts(int n) {
  static const char* words[] = {"the",  "cat",  "sat",       "on",      "mat",   "a",    "dog",
                                "ran",  "far",  "away",      "quick",   "brown", "fox",  "jumps",
                                "over", "lazy", "positions", "encoder", "sees",  "order"};
  uint64_t state = 20261123;
  std::vector<std::string> texts;
  for (int i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int k = int((state >> 33) % 41);
    std::string t;
    for (int w = 0; w < k; ++w) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      t += (w ? " " : "") + std::string(words[(state >> 33) % 20]);
    }
    texts.push_back(t);
  }
  return texts;
}

TEST(Stream, ManyLinesComeBackInInputOrder) {
  const auto texts = many_texts(5000);  // windows of 64, 128, ... 4096 texts
  test::TempDir dir;
  {
    std::ofstream out(dir.path + "/in.txt");
    for (const auto& t : texts) out << t << "\n";
  }
  const auto r = run_ordo("encode --json" + kModel + "--input " + dir.path + "/in.txt");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) ASSERT_EQ(lines[i]["text"], texts[i]) << "line " << i + 1;
  // A text's vector does not depend on the lines around it (or on which window it fell in).
  for (size_t i : {0u, 255u, 256u, 4351u, 4999u}) {
    const auto alone = json_lines(run_ordo("encode --json" + kModel + quote(texts[i])).out);
    ASSERT_EQ(alone.size(), 1u);
    const auto &a = lines[i]["embedding"], &b = alone[0]["embedding"];
    for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j].get<double>(), b[j].get<double>(), 1e-5) << i;
  }
}

// Output starts before the input ends: an endless input still gives its first line, and the
// command ends when its reader does (read whole, this input would never end).
TEST(Stream, EndlessInputGivesItsFirstLine) {
  const std::string cmd = "bash -c " + quote("yes 'the cat sat on the mat' | " + std::string(ORDO_BINARY) +
                                             " encode --json" + kModel + "2>/dev/null | head -n 1");
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  ASSERT_EQ(test::count_lines(out), 1) << out.substr(0, 200);
  EXPECT_EQ(nlohmann::json::parse(out)["text"], "the cat sat on the mat");
}

// One bad line among good ones: by default everything before it is printed and the command
// stops there with one error line; with --skip-bad every good line is printed, each bad one is
// named, and the summary is the one error line.
TEST(Stream, BadLineKeepsTheLinesBeforeIt) {
  test::TempDir dir;
  const std::string file = dir.path + "/in.txt";
  {
    std::ofstream out(file, std::ios::binary);
    for (int i = 1; i <= 3000; ++i) {
      if (i == 2001)
        out << "bad \xC3\x28 line\n";  // invalid UTF-8
      else if (i == 2500)
        out << std::string("nul\0here", 8) << "\n";
      else
        out << "line number " << i << "\n";
    }
  }
  auto r = run_ordo("encode --json" + kModel + "--input " + file);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: " + file + ": line 2001: invalid UTF-8 at byte 4\n");
  auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 2000u);
  EXPECT_EQ(lines.back()["text"], "line number 2000");

  r = run_ordo("encode --json --skip-bad" + kModel + "--input " + file);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "skipped: " + file + ": line 2001: invalid UTF-8 at byte 4\n" + "skipped: " + file +
                       ": line 2500: holds a NUL byte at byte 3 (binary data, not text)\n" + "error: " + file +
                       ": skipped 2 of 3000 texts that could not be encoded (line 2001, line 2500); the other 2998 "
                       "were printed\n");
  lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 2998u);
  EXPECT_EQ(lines[1999]["text"], "line number 2000");
  EXPECT_EQ(lines[2000]["text"], "line number 2002");
  EXPECT_EQ(lines.back()["text"], "line number 3000");
}

// --truncate cuts a long text at a character boundary; a "text" of continuation bytes has none,
// and is refused rather than cut to nothing.
TEST(Stream, TruncateRefusesInvalidUtf8) {
  test::TempDir dir;
  const std::string file = dir.path + "/in.txt";
  std::ofstream(file, std::ios::binary) << std::string(3 << 20, '\x80') << "\nshort line\n";
  const auto r = run_ordo("encode --json --truncate" + kModel + "--input " + file);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(file + ": line 1: invalid UTF-8 at byte 0"), std::string::npos) << r.err;
}

TEST(Input, FullDiskIsAnError) {
  const auto r = run_ordo("encode" + kModel + "hello >/dev/full");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "error: ordo encode: cannot write to stdout: No space left on device\n");
}

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

TEST(InitCommand, RefusesAConfigTooLargeForMemory) {
  test::TempDir dir;
  std::ofstream(dir.path + "/huge.json") << R"({"vocab_size": 16777216, "d_model": 16777216, "n_heads": 1,
    "d_ff": 1, "n_layers": 16777216, "positional_encoding": "none"})";
  std::ofstream(dir.path + "/big.json") << R"({"vocab_size": 16777216, "d_model": 65536, "n_heads": 1,
    "d_ff": 1, "n_layers": 1, "positional_encoding": "none"})";
  auto r = test::run_ordo("init --config " + dir.path + "/huge.json --out " + dir.path + "/m");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: " + dir.path + "/huge.json: the parameter count overflows 64 bits\n");
  r = test::run_ordo("init --config " + dir.path + "/big.json --out " + dir.path + "/m");
  EXPECT_EQ(r.status, 2);
  // V·d + 4d² + 2F·d + F + 9d = 2^40 + 2^34 + 2^17 + 1 + 9·2^16 floats = 4466769395428 bytes
  EXPECT_NE(r.err.find("big.json: asks for 4259842 MiB of weights"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

using test::quote;
using test::run_ordo;

const std::string kDefault = std::string(" --model ") + ORDO_DEFAULT_MODEL + " ";

// A copy of the default model in `dir`.
void copy_default_model(const std::string& dir) {
  ASSERT_EQ(std::system(("cp -r " + std::string(ORDO_DEFAULT_MODEL) + " " + quote(dir)).c_str()), 0);
}

// Runs a shell command line with bash; stdout and the status.
test::Run run_shell(const std::string& line) {
  test::Run r{-1, "", ""};
  if (FILE* p = ::popen(("bash -c " + quote(line)).c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = ::pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  return r;
}

// A FIFO in place of any of the three files is refused at once. (`timeout` only keeps a hang
// from stalling the suite: a hang is status 124.)
TEST(SpecialFiles, FifoAsAModelFileIsRefused) {
  for (const char* name : {"model.safetensors", "config.json", "tokenizer.model"}) {
    test::TempDir dir;
    const std::string m = dir.path + "/m";
    copy_default_model(m);
    ASSERT_EQ(std::system(("rm " + m + "/" + name + " && mkfifo " + m + "/" + name).c_str()), 0);
    const auto r = run_shell("timeout 30 " + std::string(ORDO_BINARY) + " encode --model " + m + " hello 2>&1");
    EXPECT_EQ(r.status, 2) << name << ": " << r.out;
    EXPECT_EQ(r.out, "error: " + m + "/" + name + ": not a regular file (a FIFO)\n") << name;
  }
}

// The weights are read, not mapped: a file truncated (or rewritten) after loading changes
// nothing for the loaded model (a mapped one would end the process with SIGBUS).
TEST(SpecialFiles, WeightsTruncatedAfterLoadingKeepWorking) {
  test::TempDir dir;
  const std::string m = dir.path + "/m";
  copy_default_model(m);
  Pipeline pipeline(m);
  const auto before = pipeline.encode(std::vector<std::string>{"the cat sat on the mat"}, Pooling::Mean);
  ASSERT_EQ(::truncate((m + "/model.safetensors").c_str(), 0), 0);
  const auto after = pipeline.encode(std::vector<std::string>{"the cat sat on the mat"}, Pooling::Mean);
  EXPECT_EQ(before[0].values, after[0].values);
}

TEST(Limits, PeAtTheEdges) {
  auto r = run_ordo("pe --dim 1 --variant paper");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("needs an even --dim"), std::string::npos) << r.out;
  r = run_ordo("pe --positions 4096 --dim 65536 --no-properties --similarity-png /nonexistent/x.png");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind("error: ordo pe: --similarity-png of 4096 positions x 65536 dims is too many", 0), 0u) << r.err;
}

TEST(Limits, ThreadsOutOfRangeAreUsageErrors) {
  for (const char* n : {"-1", "100000"}) {
    const auto r = run_ordo(std::string("encode --threads ") + n + kDefault + "hello");
    EXPECT_EQ(r.status, 2) << n;
    EXPECT_EQ(r.err,
              std::string("error: ordo encode: --threads must be in 0 .. 1024 (0: one per core), got ") + n + "\n");
  }
}

// Every numeric option is checked the same way, before any work: one line naming the option, its
// range and the value given.
TEST(Limits, NumericOptionsAreRangeChecked) {
  const std::pair<const char*, const char*> cases[] = {
      {"bench --peak -5", "--peak must be in 0.001 .. 1e+09 GFLOP/s, got -5"},
      {"bench --peak 0", "--peak must be in 0.001 .. 1e+09 GFLOP/s, got 0"},
      {"bench --repeat 0", "--repeat must be in 1 .. 100000, got 0"},
      {"bench --seq -1", "--seq must be in 1 .. 65536, got -1"},
      {"fill --top -3 'the <mask>'", "--top must be in 1 .. 16777216, got -3"},
      {"trace --dims 0 cat", "--dims must be in 1 .. 16777216, got 0"},
      {"encode --max-tokens 0 cat", "--max-tokens must be in 1 .. 16777216, got 0"},
      {"encode --precision 41 cat", "--precision must be in 0 .. 40, got 41"},
      {"pe --columns -2", "--columns must be in 1 .. 65536, got -2"},
      {"pe --positions 0", "--positions must be in 1 .. 16777216, got 0"},
  };
  for (const auto& [args, message] : cases) {
    const std::string cmd = args;
    const auto r = run_ordo(cmd);
    EXPECT_EQ(r.status, 2) << cmd;
    EXPECT_EQ(r.err, "error: ordo " + cmd.substr(0, cmd.find(' ')) + ": " + message + "\n") << cmd;
    EXPECT_EQ(r.out, "") << cmd;
  }
}

TEST(Limits, HelpIntoAFullDiskFails) {
  const auto r = run_shell(std::string(ORDO_BINARY) + " --help 2>&1 >/dev/full; echo \" status $?\"");
  EXPECT_EQ(r.out, "error: ordo help: cannot write to stdout: No space left on device\n status 1\n");
}

TEST(Limits, BenchChecksMemoryBeforeAllocating) {
  const auto r = run_ordo("bench --batch 65536 --seq 8192 --repeat 1" + kDefault);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind("error: ordo bench: --batch 65536 x --seq 8192 needs ", 0), 0u) << r.err;
}

// Past the learned positions: one error line and nothing printed before it.
TEST(Limits, TracePastTheLearnedPositionsPrintsNothing) {
  const std::string m = std::string(ORDO_SOURCE_DIR) + "/tests/corpus/odd/learned_positions";
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the cat ";
  for (const char* cmd : {"trace", "attention"}) {
    const auto r = run_ordo(std::string(cmd) + " --model " + m + " " + quote(text));
    EXPECT_EQ(r.status, 2) << cmd;
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_EQ(test::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("argument 1: text has"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the model's max_positions 32"), std::string::npos) << r.err;
  }
}

// Writes that fail part-way (a file-size limit stands in for a full disk): one error line, and
// none of the command's files left, whole or partial.
TEST(OutputFiles, FailedInitLeavesNothing) {
  test::TempDir dir;
  std::ofstream(dir.path + "/c.json") << R"({"vocab_size": 8000, "d_model": 4, "n_heads": 1, "d_ff": 4,
    "n_layers": 1, "positional_encoding": "none"})";
  // The weights (~130 KB) fit under the limit; the tokenizer (~380 KB) does not.
  const auto r = run_shell("trap '' XFSZ; ulimit -f 256; " + std::string(ORDO_BINARY) + " init --config " + dir.path +
                           "/c.json --out " + dir.path + "/m --tokenizer " + ORDO_DEFAULT_MODEL +
                           "/tokenizer.model 2>&1; echo \" status $?\"");
  EXPECT_NE(r.out.find(" status 2\n"), std::string::npos) << r.out;
  EXPECT_EQ(test::count_lines(r.out), 2) << r.out;
  EXPECT_FALSE(std::ifstream(dir.path + "/m/model.safetensors").good());
  EXPECT_FALSE(std::ifstream(dir.path + "/m/config.json").good());
  EXPECT_NE(std::system(("test -e " + dir.path + "/m").c_str()), 0) << "the directory it made goes too";
}

TEST(OutputFiles, InitRefusesATokenizerNamedLikeItsConfig) {
  test::TempDir dir;
  std::ofstream(dir.path + "/c.json") << R"({"vocab_size": 8000, "d_model": 4, "n_heads": 1, "d_ff": 4,
    "n_layers": 1, "positional_encoding": "none", "tokenizer": "config.json"})";
  const auto r = run_ordo("init --config " + dir.path + "/c.json --out " + dir.path + "/m --tokenizer " +
                          ORDO_DEFAULT_MODEL + "/tokenizer.model");
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "error: " + dir.path +
                       "/c.json: key \"tokenizer\" names \"config.json\", a file of the model that is not a "
                       "tokenizer\n");
  EXPECT_NE(std::system(("test -e " + dir.path + "/m").c_str()), 0);
}

TEST(OutputFiles, PeWritesAllItsFilesOrNone) {
  test::TempDir dir;
  // The CSV (~15 KB) fits under the limit of 16 KB; the picture (~17 KB) does not.
  const auto r = run_shell("cd " + dir.path + " && trap '' XFSZ; ulimit -f 16; " + std::string(ORDO_BINARY) +
                           " pe --positions 512 --dim 2 --csv t.csv --similarity-png s.png "
                           "--no-properties 2>&1 >/dev/null; echo \" status $?\"; ls -A");
  EXPECT_EQ(test::count_lines(r.out), 2) << "one error line (libpng adds none), the status, no files:\n" << r.out;
  EXPECT_NE(r.out.find("error: s.png: cannot write: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" status 2\n"), std::string::npos) << r.out;
}

// Output onto what is not a regular file: written directly, never replaced (as root, a rename
// would have turned /dev/null into a regular file).
TEST(OutputFiles, SpecialFilesAreWrittenNotReplaced) {
  test::TempDir dir;
  auto ordo = [](const std::string& cmd) { return std::string(ORDO_BINARY) + " " + cmd + kDefault; };
  ASSERT_EQ(run_shell(ordo("encode hello --format npy --output " + dir.path + "/plain.npy")).status, 0);
  const std::string expected = test::read_file(dir.path + "/plain.npy");
  ASSERT_GT(expected.size(), 128u);
  for (const char* cmd : {"encode hello --format npy --output /dev/null", "view hello --html /dev/null",
                          "pe --positions 8 --dim 4 --no-properties --csv /dev/null"}) {
    const std::string line = cmd[0] == 'p' ? std::string(ORDO_BINARY) + " " + cmd : ordo(cmd);
    EXPECT_EQ(run_shell(line + " >/dev/null").status, 0) << cmd;
    struct stat st {};
    ASSERT_EQ(::lstat("/dev/null", &st), 0);
    ASSERT_TRUE(S_ISCHR(st.st_mode)) << cmd << " replaced /dev/null";
  }
  // A FIFO's reader gets the bytes; /dev/stdout is the shell's redirection, and stays a link.
  auto r = run_shell("mkfifo " + dir.path + "/fifo && (cat " + dir.path + "/fifo > " + dir.path + "/got &) && " +
                     ordo("encode hello --format npy --output " + dir.path + "/fifo") + " && wait");
  EXPECT_EQ(r.status, 0);
  r = run_shell("timeout 30 sh -c 'while [ $(wc -c < " + dir.path + "/got) -lt " + std::to_string(expected.size()) +
                " ]; do sleep 0.05; done'");
  EXPECT_EQ(test::read_file(dir.path + "/got"), expected);
  r = run_shell(ordo("encode hello --format npy --output /dev/stdout") + " > " + dir.path + "/stdout.npy");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(test::read_file(dir.path + "/stdout.npy"), expected);
  struct stat st {};
  ASSERT_EQ(::lstat("/dev/stdout", &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

// Past a file-size limit the write fails with one error line (SIGXFSZ is ignored, not left to
// end the process), and the temporary file is removed.
TEST(OutputFiles, AFileSizeLimitIsAnErrorAndLeavesNoTemporary) {
  test::TempDir dir;
  {
    std::ofstream in(dir.path + "/in.txt");
    for (int i = 0; i < 2000; ++i) in << "the cat\n";  // 2000 x 64 floats: 512 KB of .npy
  }
  const auto r =
      run_shell("cd " + dir.path + " && ulimit -f 64 && " + std::string(ORDO_BINARY) + " encode" + kDefault +
                "--format npy --output big.npy --input in.txt 2>&1 >/dev/null; " + "echo \" status $?\"; ls -A");
  EXPECT_EQ(r.out, "error: big.npy: cannot write: File too large\n status 2\nin.txt\n") << r.out;
}

// SIGTERM or SIGINT while a large --format npy is being written: the process ends by the signal
// and no temporary is left. The signal is sent when the temporary file appears (inotify); a run
// that finished before it arrived is tried again with more output.
TEST(OutputFiles, SignalsDuringAWriteLeaveNoTemporary) {
  for (int sig : {SIGTERM, SIGINT}) {
    bool killed_mid_write = false;
    for (int lines = 20000; lines <= 320000 && !killed_mid_write; lines *= 4) {
      test::TempDir dir;
      {
        std::ofstream in(dir.path + "/in.txt");
        for (int i = 0; i < lines; ++i) in << "a\n";
      }
      const std::string out_dir = dir.path + "/out";
      ASSERT_EQ(::mkdir(out_dir.c_str(), 0755), 0);
      const int watch = ::inotify_init1(IN_CLOEXEC);
      ASSERT_GE(watch, 0);
      ASSERT_GE(::inotify_add_watch(watch, out_dir.c_str(), IN_CREATE), 0);
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::signal(SIGINT, SIG_DFL);
        ::execl(ORDO_BINARY, ORDO_BINARY, "encode", "--model", ORDO_DEFAULT_MODEL, "--format", "npy", "--output",
                (out_dir + "/x.npy").c_str(), "--input", (dir.path + "/in.txt").c_str(), nullptr);
        ::_exit(127);
      }
      char event[4096];
      ASSERT_GT(::read(watch, event, sizeof event), 0);  // the temporary file was created
      ::kill(pid, sig);
      ::close(watch);
      int status = 0;
      ::waitpid(pid, &status, 0);
      if (WIFSIGNALED(status)) {
        EXPECT_EQ(WTERMSIG(status), sig);
        killed_mid_write = true;
        // Nothing, or (when the signal came after the rename, as the process was ending) the whole
        // output under its own name; never the temporary.
        const std::string left = run_shell("ls -A " + out_dir).out;
        EXPECT_TRUE(left.empty() || left == "x.npy\n") << "the temporary file was left: " << left;
        if (left == "x.npy\n") {  // every row of the default model's 64 floats
          EXPECT_GE(std::filesystem::file_size(out_dir + "/x.npy"), size_t(lines) * 64 * sizeof(float));
        }
      } else {
        EXPECT_EQ(WEXITSTATUS(status), 0);
      }
    }
    EXPECT_TRUE(killed_mid_write) << "every run finished its write before signal " << sig << " arrived";
  }
}

// Under an address-space limit: the result, or one "out of memory" line and exit 1; never a
// hang (OpenBLAS retried a failed buffer for ever). `timeout` turns a hang into status 124.
TEST(Limits, AMemoryLimitEndsTheProcess) {
  if (kSanitized) GTEST_SKIP() << "the sanitizers' shadow memory does not fit under ulimit -v";
  test::TempDir dir;
  const std::string text = "the cat sat on the ";
  const std::pair<const char*, std::string> runs[] = {
      {"encode", quote(text + "mat")},
      {"score", quote(text + "mat")},
      {"fill", quote(text + "<mask>")},
      {"compare", quote(text + "mat") + " " + quote("the mat sat on the cat")},
      {"view", quote(text + "<mask>") + " --html " + dir.path + "/v.html"}};
  for (const auto& [cmd, rest] : runs)
    for (int kb : {120000, 200000, 300000, 600000}) {
      const std::string args = std::string(cmd) + kDefault + rest;
      const auto r = run_shell("ulimit -v " + std::to_string(kb) + "; timeout 120 " + std::string(ORDO_BINARY) + " " +
                               args + " 2>&1 >/dev/null; echo \" status $?\"");
      const std::string where = std::string(cmd) + " under " + std::to_string(kb) + " KB: ";
      EXPECT_TRUE(r.out == " status 0\n" || r.out == "error: ordo " + std::string(cmd) + ": out of memory\n status 1\n")
          << where << r.out;
    }
}

// A safetensors header that is valid but too large to build under the limit (6,000 arrays of 1,000
// arrays: 24 MB of text; the process reads it in 500 MB): what was built before memory ran out is
// freed without allocating (StrictJson, engine/strict_json.h), so the process ends with the one
// line, never in std::terminate. Without a limit the header is built whole and refused as it is.
TEST(Limits, AHeaderTooLargeForTheMemoryLimitIsOutOfMemory) {
  if (kSanitized) GTEST_SKIP() << "the sanitizers' shadow memory does not fit under ulimit -v";
  test::TempDir dir;
  const std::string model = dir.path + "/m";
  copy_default_model(model);
  std::string header = "[";
  for (int i = 0; i < 6000; ++i) {
    header += i ? ",[[0]" : "[[0]";
    for (int k = 1; k < 1000; ++k) header += ",[0]";
    header += "]";
  }
  header += "]";
  {
    std::ofstream out(model + "/model.safetensors", std::ios::binary | std::ios::trunc);
    for (int b = 0; b < 8; ++b) out.put(char((uint64_t(header.size()) >> (8 * b)) & 0xff));  // little-endian length
    out << header;
  }
  const std::string command = std::string(ORDO_BINARY) + " encode --model " + model + " " + quote("the cat");
  const auto whole = run_shell(command + " 2>&1 >/dev/null; echo \" status $?\"");
  EXPECT_EQ(whole.out,
            "error: " + model + "/model.safetensors: header is an array of 6000, not an object\n status 2\n");
  for (int kb : {200000, 300000, 400000}) {
    const auto r = run_shell("ulimit -v " + std::to_string(kb) + "; timeout 120 " + command +
                             " 2>&1 >/dev/null; echo \" status $?\"");
    EXPECT_EQ(r.out, "error: ordo encode: out of memory\n status 1\n") << "under " << kb << " KB";
  }
}

// The same for a tokenizer.json too large for the limit, WordPiece (1.5 million pieces, 29 MB: the
// vocabulary is built as a tree) and byte-level BPE (1.5 million merges, each a pair in an array, 37
// MB): the parsed values are freed without allocating (JsonValue, common/json_value.h). Before, both
// ended in std::terminate under 200 and 300 MB. Without a limit each is refused as it is.
TEST(Limits, ATokenizerTooLargeForTheMemoryLimitIsOutOfMemory) {
  if (kSanitized) GTEST_SKIP() << "the sanitizers' shadow memory does not fit under ulimit -v";
  test::TempDir dir;
  const auto model_with = [&](const std::string& name, const std::string& tokenizer_json) {
    const std::string model = dir.path + "/" + name;
    copy_default_model(model);
    std::string config = test::read_file(model + "/config.json");
    config.replace(config.find("tokenizer.model"), 15, "tokenizer.json");
    std::ofstream(model + "/config.json", std::ios::trunc) << config;
    std::ofstream(model + "/tokenizer.json", std::ios::binary) << tokenizer_json;
    return model;
  };
  constexpr int kMany = 1500000;
  std::string pieces = R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0)";
  for (int i = 1; i < kMany; ++i) pieces += ",\"p" + std::to_string(i) + "\": " + std::to_string(i);
  pieces += "}}}";
  std::string merges = R"({"pre_tokenizer": {"type": "ByteLevel"}, "model": {"type": "BPE", "vocab": {"a": 0},)"
                       R"( "merges": [["a", "b0"])";
  for (int i = 1; i < kMany; ++i) merges += ",[\"a\",\"b" + std::to_string(i) + "\"]";
  merges += "]}}";
  const std::pair<std::string, std::string> cases[] = {
      {model_with("wordpiece", pieces), "has 1500000 pieces but vocab_size is 8000"},
      {model_with("bpe", merges), "model.merges[0] (\"a b0\") needs \"b0\", which the vocabulary does not have"}};
  for (const auto& [model, refusal] : cases) {
    const std::string command = std::string(ORDO_BINARY) + " encode --model " + model + " " + quote("the cat");
    const auto whole = run_shell(command + " 2>&1 >/dev/null; echo \" status $?\"");
    EXPECT_NE(whole.out.find(model + "/tokenizer.json: " + refusal), std::string::npos) << whole.out;
    EXPECT_NE(whole.out.find(" status 2\n"), std::string::npos) << whole.out;
    for (int kb : {200000, 300000}) {
      const auto r = run_shell("ulimit -v " + std::to_string(kb) + "; timeout 120 " + command +
                               " 2>&1 >/dev/null; echo \" status $?\"");
      EXPECT_EQ(r.out, "error: ordo encode: out of memory\n status 1\n") << model << " under " << kb << " KB";
    }
  }
}

// A config is read once from its start, so a pipe or a process substitution is accepted, with
// the size cap of a file (16 MiB); a model directory's own files stay regular files only.
TEST(SpecialFiles, AConfigFromAPipeIsRead) {
  test::TempDir dir;
  const std::string config = R"({"vocab_size": 8000, "d_model": 4, "n_heads": 1, "d_ff": 4, "n_layers": 1,
    "positional_encoding": "none"})";
  std::ofstream(dir.path + "/c.json") << config;
  auto r = run_shell(std::string(ORDO_BINARY) + " init --config <(cat " + dir.path + "/c.json) --no-tokenizer --out " +
                     dir.path + "/m 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(test::read_file(dir.path + "/m/config.json").find("\"d_model\": 4"), std::string::npos);
  r = run_shell(std::string(ORDO_BINARY) + " init --config <(head -c 17000000 /dev/zero | tr '\\0' ' ') --out " +
                dir.path + "/m2 2>&1");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("holds more than 16777216 bytes, too large for a config (max 16777216)"), std::string::npos)
      << r.out;
  EXPECT_EQ(test::count_lines(r.out), 1) << r.out;
}

// Threads the system will not start (a limit on processes, as an ordinary user: root is exempt)
// are one error line naming how many started and the --threads that runs; --threads 1 runs.
TEST(Limits, ThreadsThatCannotStartAreNamed) {
  if (kSanitized) GTEST_SKIP() << "the sanitizers start threads of their own (LeakSanitizer at exit)";
  if (::geteuid() != 0 || std::system("command -v setpriv >/dev/null") != 0)
    GTEST_SKIP() << "needs root and setpriv, to run as nobody under ulimit -u";
  // nobody must reach the binary and the default model: not so in a checkout under a home directory
  // of mode 0700 (/root), which is no fault of ordo's.
  const std::string reach = "setpriv --reuid=nobody --regid=nogroup --clear-groups test -x " +
                            test::quote(ORDO_BINARY) + " -a -r " + test::quote(ORDO_DEFAULT_MODEL) +
                            "/model.safetensors";
  if (std::system(reach.c_str()) != 0)
    GTEST_SKIP() << "nobody cannot run " << ORDO_BINARY << " or read " << ORDO_DEFAULT_MODEL
                 << " (a directory above them is closed to others, e.g. /root of mode 0700)";
  auto as_nobody = [](const std::string& threads) {
    return run_shell("setpriv --reuid=nobody --regid=nogroup --clear-groups bash -c 'ulimit -u 2; exec " +
                     std::string(ORDO_BINARY) + " encode --threads " + threads + kDefault + "hello' 2>&1");
  };
  auto r = as_nobody("4");
  if (r.out.find("OpenBLAS blas_thread_init") != std::string::npos)
    GTEST_SKIP() << "other processes of nobody leave OpenBLAS no thread at load: " << r.out;
  EXPECT_EQ(r.status, 1) << r.out;
  // Two of the limit's two: the main thread and one helper (OpenBLAS's own thread, started at load,
  // is stopped before the engine starts its helpers: engine/kernels/blas.cpp).
  EXPECT_EQ(r.out,
            "error: ordo encode: could start only 2 of 4 threads (Resource temporarily unavailable: a limit on "
            "processes or threads, ulimit -u?); pass --threads 2 or fewer\n");
  r = as_nobody("1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("3 pieces"), std::string::npos) << r.out;
}

// Finite weights whose activations overflow float32 (the feed-forward weights times 1e20): no
// null vectors with exit 0, but one error naming the first layer and stage that is not finite.
TEST(SpecialFiles, ActivationsThatOverflowAreNamed) {
  test::TempDir dir;
  const std::string m = dir.path + "/m";
  copy_default_model(m);
  const Config c = load_config(m + "/config.json");
  std::vector<TensorBytes> weights = random_weights(c, 7);
  for (TensorBytes& t : weights)
    if (t.name.find("linear") != std::string::npos && t.name.find("weight") != std::string::npos) {
      float* v = reinterpret_cast<float*>(t.bytes.data());
      for (size_t i = 0; i < t.bytes.size() / 4; ++i) v[i] *= 1e20f;
    }
  write_safetensors(m + "/model.safetensors", weights);
  for (const char* cmd : {"encode --json", "score"}) {
    const auto r = run_ordo(std::string(cmd) + " --model " + m + " 'the cat sat'");
    test::expect_one_error(r, m + "/model.safetensors: " + "argument 1: the activations are not finite");
    EXPECT_NE(r.err.find("the activations are not finite (the weights are finite, but too large for float32 "
                         "arithmetic); the first value that is not is in layer 0, stage \"feed-forward + residual"),
              std::string::npos)
        << r.err;
  }
}

// A model directory is written whole or not at all: a name taken by a directory is found before
// anything is moved, and an existing model stays as it was.
TEST(OutputFiles, InitIsAllOrNothingForTheDirectory) {
  test::TempDir dir;
  const std::string m = dir.path + "/m";
  std::ofstream(dir.path + "/c.json") << R"({"vocab_size": 8000, "d_model": 4, "n_heads": 1, "d_ff": 4,
    "n_layers": 1, "positional_encoding": "none"})";
  ASSERT_EQ(::mkdir(m.c_str(), 0755), 0);
  std::ofstream(m + "/config.json") << "the old config";
  ASSERT_EQ(::mkdir((m + "/tokenizer.model").c_str(), 0755), 0);
  const auto r = run_ordo("init --config " + dir.path + "/c.json --force --out " + m + " --tokenizer " +
                          ORDO_DEFAULT_MODEL + "/tokenizer.model");
  test::expect_one_error(r, m + "/tokenizer.model: cannot write: it is a directory");
  EXPECT_EQ(run_shell("ls -A " + m).out, "config.json\ntokenizer.model\n");
  EXPECT_EQ(test::read_file(m + "/config.json"), "the old config");
}

// An endless line with no newline (/dev/zero, `yes | tr -d '\n'`) is refused as soon as it is longer
// than a text may be, not read for ever. (`timeout` only keeps a hang from stalling the suite.)
TEST(Input, AnEndlessLineEndsAtTheLengthLimit) {
  for (const char* source : {"/dev/zero", "<(yes 'the cat' | tr -d '\\n')"}) {
    const auto r = run_shell("timeout 20 " + std::string(ORDO_BINARY) + " encode" + kDefault + "--max-tokens 16 " +
                             "--input " + source + " 2>&1 >/dev/null; echo \" status $?\"");
    EXPECT_NE(r.out.find(": line 1: "), std::string::npos) << source << ": " << r.out;
    EXPECT_EQ(test::count_lines(r.out), 2) << source << ": " << r.out;
    EXPECT_NE(r.out.find(" status 2\n"), std::string::npos) << source << ": " << r.out;
  }
  // A long line that does end is still measured whole when its end has been read with it.
  const auto r = run_ordo("encode" + kDefault + "--max-tokens 16", std::string(4600, 'a') + "\n");
  test::expect_one_error(r, "stdin: line 1: text is 4600 bytes, more than --max-tokens 16 allows");
}

// The optional training.json of a model, which eval, encode, info, view and attention read, is opened
// as the model's own files are: a FIFO there is named at once (encode and info waited on it).
TEST(SpecialFiles, AFifoAsTrainingJsonIsRefused) {
  test::TempDir dir;
  const std::string m = dir.path + "/m";
  copy_default_model(m);
  ::unlink((m + "/training.json").c_str());  // the default model has one: a FIFO takes its place
  ASSERT_EQ(::mkfifo((m + "/training.json").c_str(), 0644), 0);
  std::ofstream(dir.path + "/t.txt") << "the cat sat on the mat\n";
  for (const std::string& command :
       {"eval --input " + dir.path + "/t.txt", std::string("encode 'the cat'"), std::string("info")}) {
    const auto r = run_shell("timeout 30 " + std::string(ORDO_BINARY) + " " + command + " --model " + m +
                             " 2>&1 >/dev/null; echo \" status $?\"");
    EXPECT_EQ(r.out, "error: " + m + "/training.json: not a regular file (a FIFO)\n status 2\n") << command;
  }
}

// A failed `encode --format npy --output FILE` (a bad line, a text too long) leaves a previous FILE
// as it was: the array is written whole or not at all.
TEST(OutputFiles, AFailedNpyEncodeKeepsThePreviousFile) {
  test::TempDir dir;
  const std::string v = dir.path + "/v.npy";
  ASSERT_EQ(run_ordo("encode --format npy --output " + v + kDefault + "'the cat' 'the mat'").status, 0);
  const std::string good = test::read_file(v);
  ASSERT_GT(good.size(), 128u);
  std::ofstream(dir.path + "/bad.txt") << "one\ntwo\nthree \xff\n";
  std::ofstream(dir.path + "/long.txt") << "one\ntwo\n" << std::string(200, 'a') << " b c d e f g h i j k\n";
  for (const char* input : {"bad.txt", "long.txt"}) {
    const auto r =
        run_ordo("encode --format npy --max-tokens 8 --output " + v + kDefault + "--input " + dir.path + "/" + input);
    test::expect_one_error(r, std::string(input) + ": line 3: ");
    EXPECT_EQ(test::read_file(v), good) << input;
    EXPECT_EQ(run_shell("ls -A " + dir.path).out, "bad.txt\nlong.txt\nv.npy\n") << "no temporary is left";
  }
}

// An output name of 250 bytes is a name the file system takes: the temporary beside it must be too.
TEST(OutputFiles, ANameOf250BytesIsWritten) {
  test::TempDir dir;
  const std::string name = dir.path + "/" + std::string(246, 'n');
  const std::string runs[] = {"encode --format npy --output " + name + ".npy" + kDefault + "'the cat'",
                              "view --html " + name + ".htm" + kDefault + "'the cat sat'",
                              "pe --positions 4 --dim 8 --csv " + name + ".csv"};
  for (const std::string& args : runs) {
    const auto r = run_ordo(args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
  }
  EXPECT_EQ(run_shell("ls -A " + dir.path + " | wc -l").out, "3\n") << run_shell("ls -A " + dir.path).out;
}

// A word where a command takes only options is refused, with what was probably meant.
TEST(Limits, StrayArgumentsAreRefused) {
  const std::string m = ORDO_DEFAULT_MODEL;
  const std::pair<std::string, std::string> runs[] = {
      {"info " + m, "error: ordo info: unexpected argument \"" + m +
                        "\" (this command takes options only; did you "
                        "mean --model " +
                        m + "?)\n"},
      {"serve --port 0 " + m, "error: ordo serve: unexpected argument \"" + m + "\""},
      {"pe " + m, "error: ordo pe: unexpected argument \"" + m + "\""},
      {"bench " + m, "error: ordo bench: unexpected argument \"" + m + "\""},
      {"init c.json",
       "error: ordo init: unexpected argument \"c.json\" (this command takes options only; did you "
       "mean --config c.json or --out c.json?)\n"}};
  for (const auto& [args, error] : runs) {
    const auto r = run_ordo(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind(error, 0), 0u) << args << ": " << r.err;
    EXPECT_EQ(test::count_lines(r.err), 1) << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
}

// The server under a process limit: HTTP threads that cannot start are one error line before it
// says it listens (it said "listening" and then answered nothing).
TEST(Limits, AServerWhoseThreadsCannotStartSaysSo) {
  if (kSanitized) GTEST_SKIP() << "the sanitizers start threads of their own (LeakSanitizer at exit)";
  if (::geteuid() != 0 || std::system("command -v setpriv >/dev/null") != 0)
    GTEST_SKIP() << "needs root and setpriv, to run as nobody under ulimit -u";
  const auto r =
      run_shell("setpriv --reuid=nobody --regid=nogroup --clear-groups bash -c 'ulimit -u 4; exec timeout 30 " +
                std::string(ORDO_BINARY) + " serve --port 0 --threads 1 --http-threads 8" + kDefault +
                "' 2>&1; echo \" status $?\"");
  if (r.out.find("OpenBLAS blas_thread_init") != std::string::npos)
    GTEST_SKIP() << "other processes of nobody leave OpenBLAS no thread at load: " << r.out;
  EXPECT_EQ(r.out.find("listening"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("error: ordo serve: could start only "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" of 8 HTTP threads (Resource temporarily unavailable: a limit on processes or threads, "
                       "ulimit -u?); pass --http-threads "),
            std::string::npos)
      << r.out;
  EXPECT_EQ(test::count_lines(r.out), 2) << r.out;
  EXPECT_NE(r.out.find(" status 1\n"), std::string::npos) << r.out;
}

// A line of U+FDFA, which NFKC makes 33 bytes of 3: within the byte limit (2 MiB for --max-tokens
// 8192), its normalized form (11 times its bytes) is not, and it is refused before the tokenizer
// makes it (it peaked at 5.2 GB); with --truncate it is cut to what the limit allows.
TEST(Input, TextThatNormalizesPastTheLimitIsRefusedFirst) {
  test::TempDir dir;
  std::string line;
  for (int i = 0; i < 240000; ++i) line += "\uFDFA";  // 720,000 bytes
  std::ofstream(dir.path + "/fdfa.txt") << line << "\n";
  auto r = run_ordo("encode" + kDefault + "--input " + dir.path + "/fdfa.txt");
  test::expect_one_error(r,
                         "fdfa.txt: line 1: text normalizes (NFKC) to more than 6291459 bytes, more than "
                         "--max-tokens 8192 allows (3 per byte of its 2097152; raise it, or add --truncate)");
  r = run_ordo("encode --json --truncate" + kDefault + "--max-tokens 64 --input " + dir.path + "/fdfa.txt");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(test::json_lines(r.out)[0]["truncated"], true);
}

}  // namespace
}  // namespace ordo
