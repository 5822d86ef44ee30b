// The connections of `ordo serve`: cpp-httplib's server with a deadline for the whole request
// instead of one for each read, and a pool of HTTP threads that says so when it cannot start.
//
// httplib's read timeout bounds each wait for bytes: a client that sends one byte a little more
// often than that keeps its connection, and the thread serving it, for as long as it likes (a request
// line of 8 KiB at a byte every 0.7 s is an hour and a half). Here every request has two deadlines,
// as a proxy in front of a server sets them (nginx's client_header_timeout and client_body_timeout):
//
//   the request, its line, headers and body, has arrived  by  t_wait + timeout
//   its answer has been taken by the client               by  t_first_write + timeout
//
// where t_wait is when the thread began to wait for the request (the connection's start, or the end
// of its previous answer) and t_first_write when the answer began to go out. A read or write that
// would pass its deadline fails instead, and the connection is closed. So a slow or silent client
// holds a thread for at most one deadline for its request and one for its answer; a stop (SIGTERM)
// ends the wait for a next request on a kept-alive connection at once.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ordo::serve {

class Server : public httplib::Server {
 public:
  // Both deadlines above (set before listening). set_keep_alive_timeout still bounds the idle wait
  // for the next request of a connection; set_read_timeout and set_write_timeout are not used.
  void set_request_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  // For a handler: did this thread's request pass its deadline (a read that failed for it)?
  static bool request_timed_out();
  // For a handler: close the connection after this answer (a body left unread would otherwise be
  // read as the next request), and say so in it: "Connection: close" and no "Keep-Alive" header
  // (httplib adds one unless the request itself asked to close, so the request is marked so).
  static void close_after_answer(const httplib::Request& req);

  // Serves one connected socket as a listening server serves an accepted one (its requests, kept
  // alive, each within the deadline), then closes it; for fuzz/fuzz_serve.cpp, which feeds whole
  // byte streams through a socket pair to a server that never listens.
  bool serve_socket(socket_t sock) {
    alone_ = true;
    return process_and_close_socket(sock);
  }

 private:
  bool process_and_close_socket(socket_t sock) override;
  std::chrono::milliseconds timeout_{10000};
  bool alone_ = false;  // serving one socket without listening: never "stopping"
};

// httplib's TaskQueue as a fixed pool of threads, all started by the constructor: one that cannot
// start throws ThreadStartError (engine/kernels/parallel.h) after stopping those that did, so the
// server says so before it says it listens (httplib's own ThreadPool starts its threads inside
// listen(), where a failure cannot be reported).
class ThreadPool : public httplib::TaskQueue {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool() override;
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;  // runs the jobs queued, then joins the threads

 private:
  void work();
  std::vector<std::thread> threads_;
  std::deque<std::function<void()>> jobs_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool shutdown_ = false;
};

}  // namespace ordo::serve
