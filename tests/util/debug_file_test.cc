// STRATA_DEBUG_FILE in a shared directory: a symbolic link planted under the
// expected name is not followed (its target keeps its bytes, the log goes to
// stderr with a warning naming the path), and a file strata creates is ours alone.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "log.h"
#include "params.h"

namespace strata::log {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class DebugFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/strata-debug-file-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    unsetenv("STRATA_DEBUG_FILE");
    params::reload();
    reload();
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(system(cmd.c_str()), 0);
  }
  // Points STRATA_DEBUG_FILE at `path` and logs one warning; returns stderr.
  std::string logTo(const std::string& path) {
    setenv("STRATA_DEBUG_FILE", path.c_str(), 1);
    setenv("STRATA_DEBUG", "WARN", 1);
    params::reload();
    ::testing::internal::CaptureStderr();
    reload();
    STRATA_WARN(INIT, "a line for the debug file");
    return ::testing::internal::GetCapturedStderr();
  }
  std::string dir_;
};

TEST_F(DebugFile, APlantedSymlinkIsNotFollowed) {
  const std::string target = dir_ + "/victim";
  const std::string link = dir_ + "/strata.log";
  { std::ofstream(target) << "precious\n"; }
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  const std::string err = logTo(link);
  EXPECT_EQ(slurp(target), "precious\n") << "the log was written through the symlink";
  EXPECT_NE(err.find("STRATA_DEBUG_FILE " + link), std::string::npos) << err;
  EXPECT_NE(err.find("symbolic link"), std::string::npos) << err;
  EXPECT_NE(err.find("a line for the debug file"), std::string::npos) << "the log should go to stderr: " << err;
}

TEST_F(DebugFile, ADanglingSymlinkCreatesNothing) {
  const std::string target = dir_ + "/would-be-created";
  const std::string link = dir_ + "/strata.log";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  logTo(link);
  EXPECT_NE(access(target.c_str(), F_OK), 0) << "O_CREAT followed the link and created its target";
}

TEST_F(DebugFile, ACreatedFileIsPrivateAndGetsTheLog) {
  const std::string path = dir_ + "/strata-%p.log";
  const std::string expanded = dir_ + "/strata-" + std::to_string(getpid()) + ".log";
  const std::string err = logTo(path);
  EXPECT_EQ(err.find("a line for the debug file"), std::string::npos) << err;
  EXPECT_NE(slurp(expanded).find("a line for the debug file"), std::string::npos);
  struct stat st;
  ASSERT_EQ(stat(expanded.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace strata::log
