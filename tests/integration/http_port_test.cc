// The HTTP port of a real basalt-server against hostile clients (docs/DESIGN.md §12; src/base/http_front.h):
// a gzip bomb POSTed to it is refused before any body is read (resident memory checked from
// /proc), slow clients dawdling over their headers do not hold up a scrape, and oversized or
// malformed requests are refused with the status HTTP gives them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/integration_util.h"
#include "tests/util/http_get.h"

namespace basalt::testing {
namespace {

// 1 GiB of zeros, gzip-compressed (about 1 MiB).
std::string GzipBomb() {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string zeros(1 << 20, '\0'), out, chunk(1 << 16, '\0');
  for (int i = 0; i < 1024; ++i) {
    z.next_in = reinterpret_cast<Bytef*>(zeros.data());
    z.avail_in = static_cast<uInt>(zeros.size());
    const int flush = i == 1023 ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(chunk.data());
      z.avail_out = static_cast<uInt>(chunk.size());
      deflate(&z, flush);
      out.append(chunk.data(), chunk.size() - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  return out;
}

// A connected TCP socket to HOST:PORT (-1 on failure).
int Dial(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(host_port.substr(colon + 1))));
  ::inet_pton(AF_INET, host_port.substr(0, colon).c_str(), &sa.sin_addr);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// Sends `request` (as much of it as the server reads) and returns what the server answered,
// to the close.
std::string Exchange(const std::string& host_port, const std::string& request) {
  const int fd = Dial(host_port);
  if (fd < 0) return "<no connection>";
  std::string answer;
  std::thread reader([&] {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) answer.append(buf, static_cast<size_t>(n));
  });
  for (size_t at = 0; at < request.size();) {
    const ssize_t n = ::send(fd, request.data() + at, request.size() - at, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server closed after answering
    at += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  reader.join();
  ::close(fd);
  return answer;
}

int64_t ResidentKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) {
      int64_t kib = 0;
      std::string digits;
      for (char c : line) {
        if (c >= '0' && c <= '9') digits += c;
      }
      return absl::SimpleAtoi(digits, &kib) ? kib : -1;
    }
  }
  return -1;
}

class HttpPort : public ServerTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StartServer({"--http_listen=127.0.0.1:0"}));
    auto st = conn_->GetAdmin()->Status();
    ASSERT_TRUE(st.ok()) << st.status();
    http_ = st->http_address;
    ASSERT_FALSE(http_.empty());
  }
  std::string http_;
};

// A POST of 1 GiB of zeros gzip-compressed, six at once: each answered 405 as soon as its headers
// are in, and the server's resident memory stays within a few MB of where it was (cpp-httplib
// read and gunzipped the body first: 31 MB -> 590 MB for one, 2.1 GB for six).
TEST_F(HttpPort, AGzipBombPostedSixTimesAtOnceIsRefusedBeforeAnyBodyIsRead) {
  const std::string bomb = GzipBomb();
  ASSERT_GT(bomb.size(), 500u * 1024);
  const std::string request = absl::StrCat("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n",
                                           "Content-Encoding: gzip\r\nContent-Length: ", bomb.size(), "\r\n\r\n", bomb);
  ASSERT_TRUE(HttpGet(http_, "/metrics").ok());  // (the port's threads and buffers up)
  const int64_t before = ResidentKiB(server_->pid());
  ASSERT_GT(before, 0);
  std::vector<std::string> answers(6);
  std::vector<std::thread> posts;
  for (std::string& a : answers) posts.emplace_back([&] { a = Exchange(http_, request); });
  for (std::thread& t : posts) t.join();
  const int64_t after = ResidentKiB(server_->pid());
  for (const std::string& a : answers) {
    EXPECT_EQ(a.rfind("HTTP/1.1 405 ", 0), 0u) << a.substr(0, 200);
    EXPECT_NE(a.find("Allow: GET, HEAD\r\n"), std::string::npos) << a.substr(0, 200);
  }
  std::printf("resident before %lld KiB, after six gzip bombs %lld KiB\n", static_cast<long long>(before),
              static_cast<long long>(after));
  EXPECT_LT(after - before, 8 * 1024) << "the server's memory grew by " << (after - before) << " KiB";
}

// Two clients sending their headers a byte at a time hold no worker: a third's scrape is answered
// within a second, and the slow ones are cut off once their head has taken head_timeout (5 s).
TEST_F(HttpPort, SlowHeaderClientsDoNotHoldUpAScrapeAndAreCutOff) {
  std::vector<int> slow;
  for (int i = 0; i < 2; ++i) {
    const int fd = Dial(http_);
    ASSERT_GE(fd, 0);
    ASSERT_GT(::send(fd, "GET / HTTP/1.1\r\nX-Slow: ", 24, MSG_NOSIGNAL), 0);
    slow.push_back(fd);
  }
  std::atomic<bool> stop{false};
  std::thread dawdler([&] {
    while (!stop) {
      for (int fd : slow) (void)!::send(fd, "a", 1, MSG_NOSIGNAL);
      absl::SleepFor(absl::Milliseconds(200));
    }
  });
  absl::SleepFor(absl::Milliseconds(300));
  for (int i = 0; i < 3; ++i) {
    const absl::Time start = absl::Now();
    absl::StatusOr<HttpReply> scrape = HttpGet(http_, "/metrics");
    const absl::Duration took = absl::Now() - start;
    ASSERT_TRUE(scrape.ok()) << scrape.status();
    EXPECT_EQ(scrape->status, 200);
    EXPECT_LT(took, absl::Seconds(1)) << "a scrape waited behind slow clients";
  }
  // Cut off after 5 s: the server closes them (recv sees the end, or a reset).
  const absl::Time start = absl::Now();
  char buf[256];
  const ssize_t n = ::recv(slow[0], buf, sizeof(buf), 0);
  EXPECT_LE(n, 0) << "a slow client got an answer";
  EXPECT_LT(absl::Now() - start, absl::Seconds(6));
  stop = true;
  dawdler.join();
  for (int fd : slow) ::close(fd);
}

TEST_F(HttpPort, OversizedMalformedAndBodyCarryingRequestsAreRefused) {
  // Headers past 8 KiB: 431.
  std::string big = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 200; ++i) big += absl::StrCat("X-Header-", i, ": ", std::string(60, 'v'), "\r\n");
  big += "\r\n";
  EXPECT_EQ(Exchange(http_, big).rfind("HTTP/1.1 431 ", 0), 0u);
  // Methods other than GET and HEAD: 405.
  EXPECT_EQ(Exchange(http_, "DELETE / HTTP/1.1\r\nHost: x\r\n\r\n").rfind("HTTP/1.1 405 ", 0), 0u);
  // A GET with a body: 413, the body unread.
  EXPECT_EQ(Exchange(http_, "GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello").rfind("HTTP/1.1 413 ", 0), 0u);
  EXPECT_EQ(Exchange(http_, "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n").rfind("HTTP/1.1 413 ", 0),
            0u);
  // Not HTTP/1.x: 400 or 505.
  EXPECT_EQ(Exchange(http_, "hello\r\n\r\n").rfind("HTTP/1.1 400 ", 0), 0u);
  EXPECT_EQ(Exchange(http_, "GET / HTTP/2.0\r\n\r\n").rfind("HTTP/1.1 505 ", 0), 0u);
  // A page that is not there: 404. HEAD: the headers alone, with the GET's length.
  EXPECT_EQ(Exchange(http_, "GET /nothing HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404 ", 0), 0u);
  const std::string head = Exchange(http_, "HEAD /healthz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200 ", 0), 0u) << head;
  EXPECT_NE(head.find("Content-Length: 3\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n") << "HEAD carried a body: " << head;
  // And the port still serves.
  absl::StatusOr<HttpReply> ok = HttpGet(http_, "/healthz");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->body, "ok\n");
}

}  // namespace
}  // namespace basalt::testing
