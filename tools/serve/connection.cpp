#include "tools/serve/connection.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "engine/kernels/parallel.h"

namespace ordo::serve {

namespace {

using Clock = std::chrono::steady_clock;

thread_local bool t_timed_out = false;
thread_local bool t_close = false;

// Waits until `sock` is ready for `events` or `deadline` passes; false when it passed (or the socket
// failed). Waits in slices, so that `give_up` (a stop) is seen within one.
bool wait_for(int sock, short events, Clock::time_point deadline, const std::function<bool()>& give_up = nullptr) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    if (give_up && give_up()) return false;
    pollfd p{sock, events, 0};
    const int n = ::poll(&p, 1, int(std::min<long long>(left, give_up ? 100 : 1000)));
    if (n > 0) return true;  // ready, or an error or hang-up the next read or write reports
    if (n < 0 && errno != EINTR) return false;
  }
}

std::string numeric_host(const sockaddr_storage& a, socklen_t len, int& port) {
  char host[NI_MAXHOST] = "", serv[NI_MAXSERV] = "";
  port = 0;
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "";
  port = std::atoi(serv);
  return host;
}

// A connected socket read through a buffer (httplib reads a request's line and headers a byte at a
// time) with the two deadlines of connection.h.
class DeadlineStream final : public httplib::Stream {
 public:
  DeadlineStream(socket_t sock, std::chrono::milliseconds timeout) : sock_(sock), timeout_(timeout) {}

  void begin_request() {
    read_deadline_ = Clock::now() + timeout_;
    write_deadline_ = {};
  }

  bool buffered() const { return start_ < end_; }

  bool is_readable() const override { return start_ < end_ || wait_for(sock_, POLLIN, read_deadline_); }

  bool is_writable() const override {
    if (write_deadline_ == Clock::time_point{}) write_deadline_ = Clock::now() + timeout_;
    return wait_for(sock_, POLLOUT, write_deadline_);
  }

  ssize_t read(char* ptr, size_t size) override {
    write_deadline_ = {};  // an answer's clock starts at its first write after the last read
    if (start_ == end_) {
      if (!wait_for(sock_, POLLIN, read_deadline_)) {
        t_timed_out = true;
        return -1;
      }
      ssize_t n;
      do n = ::recv(sock_, buffer_, sizeof buffer_, 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      start_ = 0, end_ = size_t(n);
    }
    const size_t n = std::min(size, end_ - start_);
    std::memcpy(ptr, buffer_ + start_, n);
    start_ += n;
    return ssize_t(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) {
      t_timed_out = true;
      return -1;
    }
    ssize_t n;
    do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ip = ::getpeername(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0 ? numeric_host(a, len, port) : "";
  }

  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ip = ::getsockname(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0 ? numeric_host(a, len, port) : "";
  }

  socket_t socket() const override { return sock_; }

 private:
  socket_t sock_;
  std::chrono::milliseconds timeout_;
  Clock::time_point read_deadline_;
  mutable Clock::time_point write_deadline_;
  char buffer_[4096];
  size_t start_ = 0, end_ = 0;
};

}  // namespace

bool Server::request_timed_out() {
  return t_timed_out;
}

void Server::close_after_answer(const httplib::Request& req) {
  t_close = true;
  // httplib's response writer says "Connection: close" (and no "Keep-Alive: timeout=…") when the
  // request's Connection header is "close"; the request is httplib's own (non-const) object,
  // handed to handlers as const.
  auto& headers = const_cast<httplib::Request&>(req).headers;
  headers.erase("Connection");
  headers.emplace("Connection", "close");
}

// httplib's own loop (process_server_socket in httplib.h 0.11), with the stream above: serve the
// connection's requests while the server runs, up to keep_alive_max_count of them, each after an
// idle wait of at most keep_alive_timeout.
bool Server::process_and_close_socket(socket_t sock) {
  DeadlineStream stream(sock, timeout_);
  const auto stopping = [this] { return !alone_ && svr_sock_ == INVALID_SOCKET; };
  bool ok = false;
  for (size_t count = keep_alive_max_count_; count > 0 && !stopping(); --count) {
    stream.begin_request();
    const std::chrono::milliseconds idle = std::chrono::seconds(keep_alive_timeout_sec_);
    if (!stream.buffered() && !wait_for(sock, POLLIN, Clock::now() + std::min(idle, timeout_), stopping)) break;
    t_timed_out = t_close = false;
    bool closed = false;
    ok = process_request(stream, count == 1, closed, nullptr);
    if (!ok || closed || t_close || t_timed_out) break;
  }
  t_timed_out = t_close = false;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

ThreadPool::ThreadPool(int threads) {
  for (int i = 0; i < threads; ++i) {
    try {
      threads_.emplace_back([this] { work(); });
    } catch (const std::system_error& e) {
      const int started = int(threads_.size());
      shutdown();
      throw ThreadStartError("could start only " + std::to_string(started) + " of " + std::to_string(threads) +
                             " HTTP threads (" + e.code().message() +
                             ": a limit on processes or threads, ulimit -u?); pass --http-threads " +
                             std::to_string(std::max(started, 1)) + " or fewer");
    }
  }
}

ThreadPool::~ThreadPool() {
  shutdown();
}

void ThreadPool::enqueue(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

void ThreadPool::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void ThreadPool::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return shutdown_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // shut down, and nothing left to run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace ordo::serve
