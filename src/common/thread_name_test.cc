// NameThisThread: the name `top -H` and perf show, cut to Linux's 15 bytes.

#include "common/thread_name.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace sightline {
namespace {

std::string CommOfThisThread() {
  std::ifstream in("/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

TEST(ThreadNameTest, TopShowsTheNameCutToFifteenBytes) {
  std::string short_name, long_name, renamed;
  std::thread([&] {
    NameThisThread("sl-write-logs");
    short_name = CommOfThisThread();
    NameThisThread("sl-a-name-longer-than-linux-keeps");
    long_name = CommOfThisThread();
    NameThisThread("sl-write-logs");  // another pointer than the last: named again
    renamed = CommOfThisThread();
  }).join();
  EXPECT_EQ(short_name, "sl-write-logs");
  EXPECT_EQ(long_name, "sl-a-name-longe");
  EXPECT_EQ(renamed, "sl-write-logs");
}

}  // namespace
}  // namespace sightline
