#include "src/tools/bench/tcp_echo_floor.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/status.h"
#include "src/tools/bench/server_bench_common.h"
#include "transport/tcp/frame_stream.h"
#include "transport/verbs/frame.h"
#include "transport/verbs/session.h"

namespace basalt::bench {
namespace {

using verbs::ConnectData;

// A YCSB record's row, as the engine would give it to the TCP front's reply encoder.
class RecordRow final : public verbs::ReplyRow {
 public:
  RecordRow() : row_("user1234567890123456789"), value_(kYcsbFieldBytes, 'v') {
    for (int f = 0; f < kYcsbFields; ++f) qualifiers_.push_back(absl::StrCat("field", f));
  }
  std::string_view row() const override { return row_; }
  size_t size() const override { return qualifiers_.size(); }
  verbs::ReplyCell cell(size_t i) const override {
    return verbs::ReplyCell{kFamily, qualifiers_[i], value_, /*timestamp=*/1, /*put=*/true};
  }

 private:
  std::string row_, value_;
  std::vector<std::string> qualifiers_;
};

// One connection of the echo port: skips the proof, then answers every frame with the record.
// With `row` (the codec floor), each request is decoded and admitted and its reply encoded from
// the row's cells, as the TCP front does around its Get handler (src/front/tcp_front.cc): the
// frames' whole cost at both ends, as gRPC's Echo parses and serialises its messages. Without,
// the header alone is read and the record's reply frame copied.
class EchoSession final : public server::StreamSession {
 public:
  EchoSession(const std::string* reply, const verbs::ReplyRow* row)
      : record_(reply), row_(row), reader_(1 << 20), out_(row != nullptr ? 64 << 10 : 0) {}

  absl::Span<char> Space() override {
    if (proof_ < ConnectData::kSize) return absl::MakeSpan(proof_bytes_ + proof_, ConnectData::kSize - proof_);
    const absl::Span<uint8_t> s = reader_.Space(64 << 10);
    return absl::MakeSpan(reinterpret_cast<char*>(s.data()), s.size());
  }
  void Commit(size_t n) override {
    if (proof_ < ConnectData::kSize) {
      proof_ += n;
      return;
    }
    reader_.Commit(n);
  }
  absl::Status Process(const std::shared_ptr<server::StreamConnection>& c) override {
    for (;;) {
      absl::StatusOr<std::optional<absl::Span<const uint8_t>>> next = reader_.Next();
      if (!next.ok()) return next.status();
      if (!next->has_value()) return absl::OkStatus();
      if (row_ != nullptr) {
        BASALT_RETURN_IF_ERROR(Encoded(c, **next));
        if (c->read_paused()) return absl::OkStatus();
        continue;
      }
      absl::StatusOr<verbs::FrameHeader> h = verbs::ParseHeader(**next);
      if (!h.ok()) return h.status();
      reply_.assign(*record_);
      EncodeFixed64(reply_.data() + 8, h->request_id);  // the header's request id (frame.h)
      c->Queue(reply_);
    }
  }

 private:
  absl::Status Encoded(const std::shared_ptr<server::StreamConnection>& c, absl::Span<const uint8_t> frame) {
    BASALT_RETURN_IF_ERROR(verbs::DecodeRequest(frame, &request_));
    const uint64_t id = request_.header.request_id;
    const absl::Status admitted = c->AdmitCall();
    const size_t n =
        verbs::EncodeGetReplyRow(id, admitted, admitted.ok() ? row_ : nullptr, absl::MakeSpan(out_));
    const std::string_view reply(reinterpret_cast<const char*>(out_.data()), n);
    if (admitted.ok()) {
      c->Answer(reply);
    } else {
      c->Queue(reply);
    }
    return absl::OkStatus();
  }

  const std::string* const record_;
  const verbs::ReplyRow* const row_;  // null: the copy floor
  char proof_bytes_[ConnectData::kSize];
  size_t proof_ = 0;
  tcp::FrameStreamReader reader_;
  std::string reply_;  // reused: no allocation per call
  verbs::DecodedRequest request_;
  std::vector<uint8_t> out_;
};

std::string ErrorFrame(const absl::Status& s) {
  std::vector<uint8_t> out(4096);
  const size_t n = verbs::EncodeGetReply(0, s, nullptr, absl::MakeSpan(out));
  return std::string(reinterpret_cast<const char*>(out.data()), n);
}

// A YCSB record's Get reply frame, request id 0: the record's cells encoded once (the codec
// floor encodes them per call).
std::string RecordReply() {
  const RecordRow record;
  std::vector<uint8_t> out(64 << 10);
  const size_t n = verbs::EncodeGetReplyRow(0, absl::OkStatus(), &record, absl::MakeSpan(out));
  return std::string(reinterpret_cast<const char*>(out.data()), n);
}

// The echo port on 127.0.0.1, answering with *reply, or encoding *row's cells per call (both
// must outlive it; row null: the copy floor).
absl::StatusOr<std::unique_ptr<server::StreamPort>> StartEchoPort(int loop_threads, const std::string* reply,
                                                                  const verbs::ReplyRow* row) {
  server::StreamPort::Options po;
  po.listen = "127.0.0.1:0";
  po.loop_threads = loop_threads;
  po.name = "TCP echo floor";
  server::StreamPort::Protocol protocol;
  protocol.new_session = [reply, row] { return std::make_unique<EchoSession>(reply, row); };
  protocol.connection_error = ErrorFrame;
  return server::StreamPort::Start(po, std::move(protocol));
}

// Starts this executable's `tcp_echo_port` with its stdin and stdout on pipes; returns the
// port it printed. *pid and *to_child are set as soon as the child runs, for the caller to end it.
absl::StatusOr<int> SpawnEchoPort(int loop_threads, bool codec, pid_t* pid, int* to_child) {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0) return absl::InternalError(absl::StrCat("echo floor: readlink /proc/self/exe: ", std::strerror(errno)));
  exe[len] = '\0';
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("echo floor: pipe: ", std::strerror(errno)));
  if (pipe2(out, O_CLOEXEC) != 0) {
    const int e = errno;
    close(in[0]);
    close(in[1]);
    return absl::InternalError(absl::StrCat("echo floor: pipe: ", std::strerror(e)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);  // dup2 clears O_CLOEXEC on 0 and 1
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  const std::string loops = std::to_string(loop_threads);
  char* argv[] = {const_cast<char*>("basalt-bench"), const_cast<char*>("tcp_echo_port"), const_cast<char*>(loops.c_str()),
                  codec ? const_cast<char*>("codec") : nullptr, nullptr};
  const int rc = posix_spawn(pid, exe, &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    *pid = -1;
    return absl::InternalError(absl::StrCat("echo floor: spawning ", exe, ": ", std::strerror(rc)));
  }
  *to_child = in[1];
  std::string line;
  char c;
  while (line.size() < 16) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 30000) != 1) break;  // 30 s: the child starts in milliseconds
    if (read(out[0], &c, 1) != 1 || c == '\n') break;
    line.push_back(c);
  }
  close(out[0]);
  int port = 0;
  if (!absl::SimpleAtoi(line, &port) || port <= 0 || port > 65535) {
    return absl::InternalError(absl::StrCat("echo floor: the tcp_echo_port child printed \"", line, "\", not a port"));
  }
  return port;
}

}  // namespace

int RunTcpEchoPort(int loop_threads, bool codec) {
  const std::string reply = RecordReply();
  const RecordRow row;
  absl::StatusOr<std::unique_ptr<server::StreamPort>> port =
      StartEchoPort(loop_threads, &reply, codec ? &row : nullptr);
  if (!port.ok()) {
    std::fprintf(stderr, "tcp_echo_port: %s\n", port.status().ToString().c_str());
    return 1;
  }
  std::printf("%d\n", (*port)->port());
  std::fflush(stdout);
  char buf[64];
  for (;;) {
    const ssize_t n = read(0, buf, sizeof(buf));
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    break;  // the benchmark closed its end, or ended
  }
  (*port)->Shutdown();
  return 0;
}

absl::StatusOr<std::unique_ptr<TcpEchoFloor>> TcpEchoFloor::Start(int loop_threads, int connections,
                                                                  bool in_process, bool codec) {
  std::unique_ptr<TcpEchoFloor> floor(new TcpEchoFloor());
  int port = 0;
  if (in_process) {
    floor->reply_ = RecordReply();
    if (codec) floor->row_ = std::make_unique<RecordRow>();
    BASALT_ASSIGN_OR_RETURN(floor->port_, StartEchoPort(loop_threads, &floor->reply_, floor->row_.get()));
    port = floor->port_->port();
  } else {
    BASALT_ASSIGN_OR_RETURN(port, SpawnEchoPort(loop_threads, codec, &floor->child_, &floor->child_stdin_));
  }

  // A session as the server would give one; the echo port checks none of it.
  verbs::VerbsSession session;
  session.address = "127.0.0.1";
  session.port = port;
  session.token.assign(ConnectData::kTokenBytes, 't');
  session.key.assign(ConnectData::kKeyBytes, 'k');
  session.expires = absl::InfiniteFuture();
  session.message_bytes = 1 << 20;
  tcp::TcpClientOptions co;
  co.connections = connections;
  absl::StatusOr<std::unique_ptr<tcp::TcpClient>> client = tcp::TcpClient::Open(
      [session]() -> absl::StatusOr<verbs::VerbsSession> { return session; }, "127.0.0.1", co);
  if (!client.ok()) return client.status();
  floor->client_ = *std::move(client);
  return floor;
}

TcpEchoFloor::~TcpEchoFloor() {
  client_.reset();
  if (port_ != nullptr) port_->Shutdown();
  if (child_stdin_ >= 0) close(child_stdin_);  // the child's stdin ends: it shuts its port down
  if (child_ > 0) {
    int status;
    while (waitpid(child_, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

absl::Status TcpEchoFloor::Call(const std::string& row, absl::Duration timeout) const {
  rpc::GetRequest req;
  req.set_table("usertable");
  req.set_row(row);
  req.mutable_read()->add_columns()->set_family(kFamily);
  rpc::GetResponse resp;
  bool failed = false, oversized = false;
  absl::Status s = client_->Call(
      [&](uint64_t id, absl::Span<uint8_t> out) { return verbs::EncodeGetRequest(id, req, out); },
      [&](uint64_t id, absl::Span<const uint8_t> reply) { return verbs::DecodeGetReply(reply, id, &resp); },
      absl::Now() + timeout, &failed, &oversized);
  if (s.ok() && resp.row().cells_size() != kYcsbFields) return absl::InternalError("echo floor: not the record");
  return s;
}

}  // namespace basalt::bench
