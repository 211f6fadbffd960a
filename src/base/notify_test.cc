#include "src/base/notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace basalt::server {
namespace {

// A datagram socket bound where systemd would listen; returns its descriptor.
int Listen(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, name.data(), name.size());
  if (name[0] == '@') addr.sun_path[0] = '\0';
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr),
                   static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size())),
            0)
      << std::strerror(errno);
  return fd;
}

std::string Receive(int fd) {
  char buf[512];
  const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

TEST(NotifySystemd, SendsTheStateToAPathOrAnAbstractSocket) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/notify";
  const int fd = Listen(path);
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  ASSERT_TRUE(NotifySystemd("READY=1\nSTATUS=serving").ok());
  EXPECT_EQ(Receive(fd), "READY=1\nSTATUS=serving");
  ::close(fd);

  const std::string abstract = "@basalt-notify-test-" + std::to_string(::getpid());
  const int afd = Listen(abstract);
  ::setenv("NOTIFY_SOCKET", abstract.c_str(), 1);
  ASSERT_TRUE(NotifySystemd("STOPPING=1").ok());
  EXPECT_EQ(Receive(afd), "STOPPING=1");
  ::close(afd);
  ::unsetenv("NOTIFY_SOCKET");
}

TEST(NotifySystemd, WithoutTheVariableNothingIsSentAndABadOneIsAnError) {
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_TRUE(NotifySystemd("READY=1").ok());
  ::setenv("NOTIFY_SOCKET", "relative/path", 1);
  EXPECT_EQ(NotifySystemd("READY=1").code(), absl::StatusCode::kInvalidArgument);
  ::setenv("NOTIFY_SOCKET", "/nonexistent-dir/notify", 1);
  absl::Status s = NotifySystemd("READY=1");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("/nonexistent-dir/notify"), std::string::npos) << s;
  ::unsetenv("NOTIFY_SOCKET");
}

}  // namespace
}  // namespace basalt::server
