// Fuzzes ordo serve's HTTP layer on one kept-alive connection: the input is the byte stream a client
// sends (any number of requests, pipelined, well-formed or not), served through a socket pair by the
// server `ordo serve` runs (connection.h: its whole-request deadline; routes.h: its endpoints and its
// refusals) on the default model. The answers must stay in step with the requests: each one an
// HTTP/1.1 response whose Content-Length covers its body exactly, with a status the API has and, for
// an error, a JSON body; never a 500, a crash, a hang or a sanitizer report.
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include <ordo/ordo.h>

#include "fuzz/serve_settings.h"
#include "tools/serve/connection.h"
#include "tools/serve/routes.h"
#include "tools/serve/service.h"

namespace {

using namespace ordo::serve;

Server& server() {
  static ordo::Pipeline pipeline(ORDO_FUZZ_SERVE_MODEL);
  static const Settings settings = ordo::fuzz::serve_settings(false);
  static Service service(pipeline, settings, BatchLimits{});
  static const std::string page = "<!doctype html><title>ordo</title>";  // GET /: the page's bytes are not fuzzed
  static Server* s = [] {
    auto* made = new Server;
    made->set_request_timeout(std::chrono::milliseconds(500));
    made->set_keep_alive_max_count(64);
    made->set_keep_alive_timeout(1);
    made->set_payload_max_length(4096);
    install_routes(*made, service, settings, page, 4096);
    made->set_logger([](const httplib::Request&, const httplib::Response&) {});
    return made;
  }();
  return *s;
}

// The statuses an answer may have: the API's (docs/serve.md) and httplib's own refusals of what is
// not HTTP it takes (100 Continue before a body; a range of GET /).
const std::set<int> kStatuses = {100, 200, 206, 400, 404, 405, 408, 413, 414, 415, 416, 417, 422, 431, 503};

size_t content_length(const std::string& head) {
  std::string lower(head);
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  const size_t at = lower.find("\r\ncontent-length: ");
  if (at == std::string::npos) return 0;
  return std::strtoull(head.c_str() + at + 18, nullptr, 10);
}

void check(const std::string& answers, bool framed) {
  for (size_t pos = 0; pos < answers.size();) {
    if (answers.compare(pos, 9, "HTTP/1.1 ") != 0) std::abort();
    const int status = std::atoi(answers.c_str() + pos + 9);
    if (!kStatuses.count(status)) std::abort();
    const size_t end = answers.find("\r\n\r\n", pos);
    if (end == std::string::npos) std::abort();
    if (!framed) return;  // a HEAD request's answer has a Content-Length and no body
    const size_t n = content_length(answers.substr(pos, end - pos));
    if (end + 4 + n > answers.size()) std::abort();
    if (status >= 400) {
      const auto j = nlohmann::json::parse(answers.substr(end + 4, n), nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.contains("error")) std::abort();
    }
    pos = end + 4 + n;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) std::abort();
  std::string answers;
  // The client writes and reads in threads of its own, so that a server writing answers never waits
  // on a client still writing requests.
  std::thread writer([&] {
    for (size_t off = 0; off < size;) {
      const ssize_t n = ::send(pair[1], data + off, size - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += size_t(n);
    }
    ::shutdown(pair[1], SHUT_WR);
  });
  std::thread reader([&] {
    char buf[65536];
    for (ssize_t n; (n = ::recv(pair[1], buf, sizeof buf, 0)) > 0;) answers.append(buf, size_t(n));
  });
  server().serve_socket(pair[0]);  // closes pair[0]
  writer.join();
  reader.join();
  ::close(pair[1]);
  const std::string input(reinterpret_cast<const char*>(data), size);
  check(answers, input.find("HEAD") == std::string::npos);
  return 0;
}
